// The Vulkan device clock on the CPU, fed a fake vkGetCalibratedTimestampsEXT: NVIDIA's device time
// domain (Unix-epoch nanoseconds, period 1 ns, as research/vulkan.md measured on the H200) mapped
// exactly, and a window's two ends mapped through one anchor (review-2026-12-01b finding 12).
#include <chrono>
#include <cstdint>
#include <cstdlib>

#include <gtest/gtest.h>

#include "backend/vulkan/device_clock.hpp"

namespace {

using launchwatch::instant;
using launchwatch::detail::vulkan::device_api;
using launchwatch::detail::vulkan::device_clock;
using namespace std::chrono_literals;

constexpr std::uint64_t epoch_now = 1796109619123456789ull;  // 2026-12-01, as measured
constexpr std::uint64_t host_now = 1000000000000ull;         // CLOCK_MONOTONIC

/// The fake driver's clocks: each reading moves the host clock `host_step_ns` past the device
/// clock (a stepped host clock when large), so every anchor after the first differs.
struct fake_clocks {
  std::uint64_t device = epoch_now;
  std::uint64_t host = host_now;
  std::uint64_t host_step_ns = 0;
  int readings = 0;
};
fake_clocks clocks;

VkResult VKAPI_PTR calibrated(VkDevice, uint32_t, const VkCalibratedTimestampInfoEXT*,
                              uint64_t* stamps, uint64_t* deviation) {
  stamps[0] = clocks.device;
  stamps[1] = clocks.host + clocks.host_step_ns * static_cast<std::uint64_t>(clocks.readings);
  ++clocks.readings;
  *deviation = 10;
  return VK_SUCCESS;
}

device_api fake_api() {
  device_api api{};
  api.vkGetCalibratedTimestampsEXT = &calibrated;
  return api;
}

std::int64_t ns(instant at) {
  return at.time_since_epoch().count();
}

class VulkanDeviceClock : public ::testing::Test {
 protected:
  void SetUp() override { clocks = fake_clocks{}; }
  device_api api_ = fake_api();
};

TEST_F(VulkanDeviceClock, KernelLengthsOnAnEpochCountedDeviceClockMapToTheSameHostLengths) {
  device_clock clock{api_, VK_NULL_HANDLE, 1.0};
  const std::uint64_t start = epoch_now + 5000;
  for (const std::uint64_t length : {0ull, 100ull, 200ull, 300ull, 1000ull, 1100ull}) {
    const auto mapped = ns(clock.to_host(start + length)) - ns(clock.to_host(start));
    EXPECT_NEAR(static_cast<double>(mapped), static_cast<double>(length), 1.0)
        << "a kernel of " << length << " ns on the device";
    const auto window = clock.window(start, start + length, instant{});
    EXPECT_NEAR(static_cast<double>(window.length().count()), static_cast<double>(length), 1.0)
        << "a window of " << length << " ns on the device";
  }
}

TEST_F(VulkanDeviceClock, ATimestampMapsToTheHostTimeOfItsAnchorPlusItsTicks) {
  device_clock clock{api_, VK_NULL_HANDLE, 1.0};
  EXPECT_EQ(ns(clock.to_host(epoch_now + 1234)), static_cast<std::int64_t>(host_now) + 1234);
  EXPECT_EQ(ns(clock.to_host(epoch_now - 77)), static_cast<std::int64_t>(host_now) - 77);
}

TEST_F(VulkanDeviceClock, AReAnchorBetweenAWindowsTwoEndsDoesNotSplitTheWindow) {
  // Every mapping re-anchors, and every anchor finds the host clock stepped by 5 ms: mapped one
  // end at a time, the window's ends land 5 ms apart beyond its length.
  clocks.host_step_ns = 5'000'000;
  device_clock clock{api_, VK_NULL_HANDLE, 1.0, 0ns};
  const std::uint64_t start = epoch_now + 20'000;
  const std::uint64_t end = start + 700;
  const auto split = ns(clock.to_host(end)) - ns(clock.to_host(start));
  ASSERT_GT(std::abs(split - 700), 1'000'000) << "the fake did not step the anchor";

  const int before = clocks.readings;
  const auto window = clock.window(start, end, instant{});
  EXPECT_EQ(clocks.readings, before + 1) << "a window is mapped through one anchor";
  EXPECT_EQ(window.length(), 700ns);
}

TEST_F(VulkanDeviceClock, AWindowMappedBeforeItsSubmissionIsMovedWholeToStartThere) {
  device_clock clock{api_, VK_NULL_HANDLE, 1.0};
  const std::uint64_t start = epoch_now + 1000;
  const instant submitted{std::chrono::nanoseconds{host_now + 50'000}};
  const auto window = clock.window(start, start + 300, submitted);
  EXPECT_EQ(window.start(), submitted);
  EXPECT_EQ(window.length(), 300ns);
}

TEST_F(VulkanDeviceClock, AnEndStampedBeforeItsStartIsAWindowOfLengthZero) {
  device_clock clock{api_, VK_NULL_HANDLE, 1.0};
  const auto window = clock.window(epoch_now + 900, epoch_now + 400, instant{});
  EXPECT_EQ(ns(window.start()), static_cast<std::int64_t>(host_now) + 900);
  EXPECT_EQ(window.length(), 0ns);
}

TEST_F(VulkanDeviceClock, AMappingIsExactToTheNanosecondFarFromAnEpochCountedAnchor) {
  const device_clock::mapping through{epoch_now, 42, 1.0};
  EXPECT_EQ(device_clock::map(through, epoch_now + 1), 43);
  EXPECT_EQ(device_clock::map(through, epoch_now + 999'999'999), 42 + 999'999'999);
  EXPECT_EQ(device_clock::map(through, epoch_now - 3), 39);
}

}  // namespace
