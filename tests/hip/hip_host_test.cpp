// The HIP backend's parts that need no GPU: what client::hip() says where there is none, how HIP's
// errors are told apart and described, and the HIP names of deferred timing's settings. Compiled by
// g++ (by nvcc on HIP's NVIDIA platform, whose HIP headers need it) and run everywhere, CI
// included.

#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

#include "backend/gpu/timing_slots.hpp"
#include "backend/hip/hip_check.hpp"
#include "backend/hip/hip_runtime.hpp"
#include "conformance/without_device_suite.hpp"
#include "hip/hip_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(hip, backend_without_device, hip_backend);
}  // namespace launchwatch::conformance

namespace launchwatch::hip_testing {
namespace {

using detail::hip::hip_runtime;

TEST(HipClient, ANegativeDeviceIndexIsRefusedSayingIndicesCountFromZero) {
  try {
    (void)client::hip(-1);
    FAIL() << "client::hip(-1) returned";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("counts from 0"));
  }
}

TEST(HipErrors, DeviceFaultsAreStickyAndOrdinaryFailuresAreNot) {
  EXPECT_TRUE(detail::hip::is_sticky(hipErrorIllegalAddress));
  EXPECT_TRUE(detail::hip::is_sticky(hipErrorLaunchFailure));
  EXPECT_TRUE(detail::hip::is_sticky(hipErrorAssert));
  EXPECT_FALSE(detail::hip::is_sticky(hipErrorOutOfMemory));
  EXPECT_FALSE(detail::hip::is_sticky(hipErrorInvalidValue));
  EXPECT_FALSE(detail::hip::is_sticky(hipErrorNotReady));
}

TEST(HipErrors, AFailureNamesTheCallTheKernelTheDeviceAndHipsError) {
  const std::string text =
      detail::hip::describe_failure(hipErrorIllegalAddress, "hipStreamSynchronize", "demo::k", 2);
  EXPECT_THAT(text, ::testing::HasSubstr("hipStreamSynchronize"));
  EXPECT_THAT(text, ::testing::HasSubstr("'demo::k'"));
  EXPECT_THAT(text, ::testing::HasSubstr("device 2"));
  // HIP's own name of the error (on HIP's NVIDIA platform, CUDA's: HIP maps its names there).
  EXPECT_THAT(text, ::testing::HasSubstr(hipGetErrorName(hipErrorIllegalAddress)));
  EXPECT_THAT(text, ::testing::HasSubstr("sticky"));
}

TEST(HipErrors, NoDeviceIsBackendUnavailableAndAFaultOfANamedKernelIsAKernelFailure) {
  EXPECT_THROW(detail::hip::throw_failure(hipErrorNoDevice, "hipSetDevice", {}, 0),
               backend_unavailable);
  EXPECT_THROW(
      detail::hip::throw_failure(hipErrorIllegalAddress, "hipStreamSynchronize", "demo::k", 0),
      kernel_failure);
  EXPECT_THROW(detail::hip::throw_failure(hipErrorOutOfMemory, "hipMallocAsync", {}, 0),
               device_error);
}

TEST(HipErrors, OutOfMemorySaysTheSizeAskedForAndWhatWasFree) {
  const std::string text = detail::hip::describe_out_of_memory(
      std::size_t{3} << 30, std::size_t{1} << 30, std::size_t{64} << 30, 1);
  EXPECT_THAT(text, ::testing::HasSubstr("HIP device 1 is out of memory"));
  EXPECT_THAT(text, ::testing::HasSubstr("3221225472 bytes (3.0 GiB)"));
  EXPECT_THAT(text, ::testing::HasSubstr("1.0 GiB free of its 64.0 GiB"));
  EXPECT_THAT(text, ::testing::HasSubstr("hipErrorOutOfMemory"));
}

TEST(HipTimingSlots, TheBudgetIsReadFromTheHipVariableAndABadOneIsNamed) {
  EXPECT_EQ(detail::gpu::parse_timing_slots(hip_runtime::timing_slots_variable, "1024"), 1024u);
  try {
    (void)detail::gpu::parse_timing_slots(hip_runtime::timing_slots_variable, "100");
    FAIL() << "accepted 100 slots";
  } catch (const configuration_error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("LAUNCHWATCH_HIP_TIMING_SLOTS"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("multiple of 512"));
  }
}

}  // namespace
}  // namespace launchwatch::hip_testing
