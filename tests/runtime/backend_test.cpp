// What runtime/backend.hpp gives every backend alike: a stream's failure bookkeeping and the
// wording of its errors.
#include <exception>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/errors.hpp>

#include "backend/cpu/cpu_device.hpp"
#include "runtime/backend.hpp"

namespace {

using launchwatch::detail::stream_failure;
using ::testing::HasSubstr;

std::string message_of(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::exception_ptr error(const char* what) {
  return std::make_exception_ptr(std::runtime_error{what});
}

TEST(StreamFailure, TheFirstFailureNotYetTakenIsKeptAndALaterOneDropped) {
  stream_failure failure;
  EXPECT_FALSE(failure);
  failure.keep(error("first"), 5);
  failure.keep(error("second"), 3);
  ASSERT_TRUE(failure);
  EXPECT_EQ(message_of(failure.take()), "first");
}

TEST(StreamFailure, AFailureShowsThroughItsOwnPointAndLaterOnesNotEarlierOnesAndStaysKept) {
  stream_failure failure;
  failure.keep(error("at 7"), 7);
  EXPECT_EQ(failure.through(6), nullptr);
  EXPECT_NE(failure.through(7), nullptr);
  EXPECT_NE(failure.through(9), nullptr);
  EXPECT_TRUE(failure) << "showing a failure does not take it";
}

TEST(StreamFailure, TakingTheFailureClearsItSoTheNextOneIsKept) {
  stream_failure failure;
  failure.keep(error("first"), 1);
  (void)failure.take();
  EXPECT_FALSE(failure);
  EXPECT_EQ(failure.take(), nullptr);
  failure.keep(error("next"), 4);
  EXPECT_EQ(message_of(failure.through(4)), "next");
}

TEST(BackendErrors, ARejectedLaunchNamesTheKernelAndTheDeviceByItsLabel) {
  const launchwatch::detail::cpu_device device{3};
  EXPECT_EQ(launchwatch::detail::launch_rejected("demo::k", device, "it is wrong; do this"),
            "launch of `demo::k` on cpu:3 rejected: it is wrong; do this");
}

TEST(BackendErrors, AFailedKernelIsAKernelFailureNamingItsStreamAndSayingTheStreamGoesOn) {
  const launchwatch::detail::cpu_device device{0};
  const auto failure = launchwatch::detail::kernel_failed("demo::k", device, 12, "it threw");
  try {
    std::rethrow_exception(failure);
  } catch (const launchwatch::kernel_failure& e) {
    EXPECT_EQ(e.kernel(), "demo::k");
    EXPECT_THAT(e.what(), HasSubstr("kernel `demo::k` failed on cpu:0 (stream 12): it threw."));
    EXPECT_THAT(e.what(), HasSubstr("the stream stays usable"));
  }
}

}  // namespace
