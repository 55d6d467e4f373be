// The CUDA backend's parts that need no GPU: what client::cuda() says where there is none, how
// CUDA's errors are told apart and described, and how device timestamps map onto the host clock.
// Compiled by g++ and run everywhere, CI included.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/runtime/client.hpp>
#include <launchwatch/errors.hpp>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_clock.hpp"
#include "backend/cuda/grid_overhead.hpp"
#include "backend/cuda/timing_slots.hpp"
#include "conformance/without_device_suite.hpp"
#include "cuda/cuda_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(cuda, backend_without_device, cuda_backend);
}  // namespace launchwatch::conformance

namespace launchwatch::cuda_testing {
namespace {

using detail::cuda::clock_anchor;
using detail::cuda::clock_segment;
using detail::cuda::device_clock;

TEST(CudaErrors, FaultsThatEndTheContextAreStickyAndOthersAreNot) {
  EXPECT_TRUE(detail::cuda::is_sticky(cudaErrorIllegalAddress));
  EXPECT_TRUE(detail::cuda::is_sticky(cudaErrorLaunchFailure));
  EXPECT_TRUE(detail::cuda::is_sticky(cudaErrorMisalignedAddress));
  EXPECT_FALSE(detail::cuda::is_sticky(cudaErrorMemoryAllocation));
  EXPECT_FALSE(detail::cuda::is_sticky(cudaErrorInvalidValue));
  EXPECT_FALSE(detail::cuda::is_sticky(cudaErrorNotReady));
}

TEST(CudaErrors, AFailureNamesTheCallTheKernelTheDeviceAndCudasError) {
  const std::string text =
      detail::cuda::describe_failure(cudaErrorIllegalAddress, "cudaStreamSynchronize", "demo::k", 2);
  EXPECT_THAT(text, ::testing::HasSubstr("cudaStreamSynchronize"));
  EXPECT_THAT(text, ::testing::HasSubstr("'demo::k'"));
  EXPECT_THAT(text, ::testing::HasSubstr("device 2"));
  EXPECT_THAT(text, ::testing::HasSubstr("cudaErrorIllegalAddress"));
  EXPECT_THAT(text, ::testing::HasSubstr("sticky"));
  const std::string plain =
      detail::cuda::describe_failure(cudaErrorMemoryAllocation, "cudaMallocAsync", {}, 0);
  EXPECT_THAT(plain, ::testing::Not(::testing::HasSubstr("sticky")));
}

TEST(CudaErrors, ANoDeviceErrorIsThrownAsBackendUnavailable) {
  EXPECT_THROW(detail::cuda::throw_failure(cudaErrorNoDevice, "cudaSetDevice", {}, 0),
               backend_unavailable);
  EXPECT_THROW(detail::cuda::throw_failure(cudaErrorIllegalAddress, "cudaStreamSynchronize",
                                           "demo::k", 0),
               kernel_failure);
  EXPECT_THROW(detail::cuda::throw_failure(cudaErrorMemoryAllocation, "cudaMallocAsync", {}, 0),
               device_error);
}

// Fault table row 6: an allocation that does not fit says so with its size and what was free.
TEST(CudaErrors, OutOfMemorySaysTheSizeAskedForAndWhatWasFree) {
  const std::string text = detail::cuda::describe_out_of_memory(
      std::size_t{3} << 40, std::size_t{100} << 30, std::size_t{141} << 30, 1);
  EXPECT_THAT(text, ::testing::HasSubstr("CUDA device 1 is out of memory"));
  EXPECT_THAT(text, ::testing::HasSubstr("3298534883328 bytes (3072.0 GiB)"));
  EXPECT_THAT(text, ::testing::HasSubstr("100.0 GiB free of its 141.0 GiB"));
  EXPECT_THAT(text, ::testing::HasSubstr("ask for less"));
  const std::string unknown = detail::cuda::describe_out_of_memory(512, 0, 0, 0);
  EXPECT_THAT(unknown, ::testing::HasSubstr("512 bytes (512 bytes)"));
  EXPECT_THAT(unknown, ::testing::Not(::testing::HasSubstr("free of")));
}

// ---- the device clock's mapping -------------------------------------------------------------

// Device times as %globaltimer gives them: nanoseconds since 1970, about 1.7e18.
constexpr std::uint64_t epoch = 1'760'000'000'000'000'000ull;
constexpr std::int64_t second = 1'000'000'000;

TEST(DeviceClockMapping, MapsATimestampThroughTheSegmentThatCoversIt) {
  const std::vector<clock_segment> segments{{epoch, 5'000, 1.0}, {epoch + 1000, 7'000, 1.0}};
  EXPECT_EQ(device_clock::map(segments, epoch + 10), 5'010);
  EXPECT_EQ(device_clock::map(segments, epoch + 1000), 7'000);
  EXPECT_EQ(device_clock::map(segments, epoch + 1500), 7'500);
  EXPECT_EQ(device_clock::map(segments, epoch - 20), 4'980) << "before the first: extrapolated back";
}

TEST(DeviceClockMapping, KeepsEveryNanosecondOfTimestampsFarFromTheEpoch) {
  const std::vector<clock_segment> segments{{epoch, 123'456'789'000, 1.0}};
  for (std::uint64_t ns : {1ull, 7ull, 999'999'999ull, 3'600'000'000'001ull}) {
    EXPECT_EQ(device_clock::map(segments, epoch + ns), 123'456'789'000 + static_cast<std::int64_t>(ns));
  }
}

TEST(DeviceClockMapping, ANewSegmentStartsWhereThePreviousOneHadGot) {
  const clock_segment first{epoch, 0, 1.0};
  // The second anchor finds the host 3 µs ahead of the first segment's extrapolation.
  const std::vector<clock_anchor> anchors{{epoch, 0, 500}, {epoch + second, second + 3'000, 500}};
  const clock_segment next = device_clock::next_segment(anchors, first);
  EXPECT_EQ(next.device_ns, epoch + second);
  EXPECT_EQ(next.host_ns, second) << "the mapping jumped at the new anchor";
}

TEST(DeviceClockMapping, ClosesTheGapToANewAnchorOverOneInterval) {
  const clock_segment first{epoch, 0, 1.0};
  const std::vector<clock_anchor> anchors{{epoch, 0, 500}, {epoch + second, second + 3'000, 500}};
  const std::vector<clock_segment> segments{first, device_clock::next_segment(anchors, first)};
  // The oscillators' rate over the first second was 1 + 3 ppm; one interval later the mapping is
  // where that rate puts the host, with the 3 µs gap closed.
  const std::int64_t later = device_clock::map(segments, epoch + 2 * second);
  EXPECT_NEAR(static_cast<double>(later), 2.0 * second + 6'000, 2.0);
}

TEST(DeviceClockMapping, IsIncreasingAcrossSegmentsWhetherTheGapIsAheadOrBehind) {
  clock_segment last{epoch, 0, 1.0};
  std::vector<clock_anchor> anchors{{epoch, 0, 500}};
  std::vector<clock_segment> segments{last};
  const std::int64_t gaps[] = {4'000, -9'000, 700, -200'000, 50'000};
  std::int64_t host = 0;
  for (std::size_t i = 0; i < std::size(gaps); ++i) {
    host += second + gaps[i];
    anchors.push_back({epoch + (i + 1) * second, host, 500});
    segments.push_back(last = device_clock::next_segment(anchors, last));
  }
  std::int64_t previous = device_clock::map(segments, epoch);
  for (std::uint64_t t = epoch; t < epoch + 6 * second; t += 9'999'991) {
    const std::int64_t now = device_clock::map(segments, t);
    ASSERT_GE(now, previous) << "at device time " << t - epoch;
    previous = now;
  }
}

TEST(DeviceClockMapping, StepsWhenTheGapIsTooLargeToSlew) {
  const clock_segment first{epoch, 0, 1.0};
  const std::vector<clock_anchor> anchors{{epoch, 0, 500}, {epoch + second, second + 5'000'000, 500}};
  const clock_segment next = device_clock::next_segment(anchors, first);
  EXPECT_EQ(next.host_ns, second + 5'000'000);
}

// Review finding 6: a window straddling a stepped re-anchor used to change length by the step.
TEST(DeviceClockMapping, AWindowStraddlingAStepKeepsItsLength) {
  const std::vector<clock_segment> segments{{epoch, 0, 1.0}, {epoch + 1'000, 5'000'000, 1.0}};
  const auto [start, end] = device_clock::map_window(segments, epoch + 500, epoch + 1'500);
  EXPECT_EQ(end - start, 1'000) << "the 5 ms step went into the kernel's length";
  EXPECT_EQ(start, 500) << "mapped through the segment that holds its start";
}

TEST(DeviceClockMapping, AWindowIsMappedLikeItsStartAlone) {
  const std::vector<clock_segment> segments{{epoch, 0, 1.0}, {epoch + second, second + 7, 1.0}};
  const auto [start, end] = device_clock::map_window(segments, epoch + 2 * second, epoch + 2 * second + 40);
  EXPECT_EQ(start, device_clock::map(segments, epoch + 2 * second));
  EXPECT_EQ(end - start, 40);
}

TEST(GridOverhead, AcceptsWholeNanosecondsUpToTheLimit) {
  EXPECT_EQ(detail::cuda::parse_grid_overhead("0"), std::chrono::nanoseconds{0});
  EXPECT_EQ(detail::cuda::parse_grid_overhead("480"), std::chrono::nanoseconds{480});
  EXPECT_EQ(detail::cuda::parse_grid_overhead("100000"), std::chrono::nanoseconds{100'000});
}

TEST(GridOverhead, RejectsAnythingElseNamingTheVariableAndWhatItAccepts) {
  for (const char* bad : {"", "-1", "0.5", "480ns", "100001", "abc"}) {
    try {
      (void)detail::cuda::parse_grid_overhead(bad);
      ADD_FAILURE() << "accepted `" << bad << "`";
    } catch (const configuration_error& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("LAUNCHWATCH_CUDA_GRID_OVERHEAD_NS"));
      EXPECT_THAT(error.what(), ::testing::HasSubstr("whole number of nanoseconds"));
    }
  }
}

TEST(TimingSlots, TheBudgetIsAMultipleOf512From512To65536) {
  EXPECT_EQ(detail::cuda::parse_timing_slots("512"), 512u);
  EXPECT_EQ(detail::cuda::parse_timing_slots("65536"), 65536u);
  for (const char* bad : {"", "0", "64", "511", "1000", "65600", "-512", "512k"}) {
    try {
      (void)detail::cuda::parse_timing_slots(bad);
      ADD_FAILURE() << "accepted `" << bad << "`";
    } catch (const configuration_error& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("LAUNCHWATCH_CUDA_TIMING_SLOTS"));
      EXPECT_THAT(error.what(), ::testing::HasSubstr("multiple of 512"));
    }
  }
}

TEST(GridOverhead, EveryMeasuredFigureSaysWhereItComesFrom) {
  ASSERT_FALSE(detail::cuda::measured_grid_overheads().empty());
  for (const auto& m : detail::cuda::measured_grid_overheads()) {
    EXPECT_GT(m.overhead.count(), 0);
    EXPECT_FALSE(m.device.empty());
    EXPECT_THAT(std::string{m.provenance}, ::testing::HasSubstr("CUPTI"));
  }
}

TEST(DeviceClockMapping, MeasuresTheRateOverTheAnchorsOfTheLastMinute) {
  // 2 ppm fast over two minutes, but the first minute's anchors are older than the window.
  std::vector<clock_anchor> anchors;
  for (int i = 0; i <= 120; i += 10) {
    const auto device = epoch + static_cast<std::uint64_t>(i) * second;
    const std::int64_t host = i <= 60 ? i * second : i * second + (i - 60) * 2'000;
    anchors.push_back({device, host, 500});
  }
  // A last segment exactly on the newest anchor: no gap to close, only the rate remains.
  const clock_segment last{anchors.back().device_ns - second,
                           anchors.back().host_ns - second - 2'000, 1.0 + 2e-6};
  const clock_segment next = device_clock::next_segment(anchors, last);
  EXPECT_NEAR(next.slope, 1.0 + 2e-6, 1e-9);
}

}  // namespace
}  // namespace launchwatch::cuda_testing
