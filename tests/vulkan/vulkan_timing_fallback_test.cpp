// The order a Vulkan device times a launch in, forced with one shader-clock slot and one timestamp
// pair (LAUNCHWATCH_VULKAN_CLOCK_SLOTS=1, LAUNCHWATCH_VULKAN_TIMESTAMPS=1, see CMakeLists.txt): its
// shader clock, then timestamp queries, then `system`; and a slot handed back measures its next
// launch alone.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <launchwatch/launchwatch.hpp>

#include "conformance/conformance_kernels.hpp"
#include "support/capturing_sink.hpp"
#include "support/recording_observer.hpp"
#include "vulkan/vulkan_backend.hpp"
#include "vulkan/vulkan_shader_clock_support.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using conformance::spin;
using detail::vulkan::timing_counts;
using detail::vulkan::vulkan_device;

class VulkanTimingFallback : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = conformance::vulkan_backend::unavailable()) GTEST_SKIP() << *why;
    ASSERT_STREQ(std::getenv("LAUNCHWATCH_VULKAN_CLOCK_SLOTS"), "1");
    ASSERT_STREQ(std::getenv("LAUNCHWATCH_VULKAN_TIMESTAMPS"), "1");
    LAUNCHWATCH_NEED_SHADER_CLOCK(device_);
    client_ = client::vulkan();
    done_ = client_.empty<int>(1);
    client_.launch(spin{1'000ull, done_.view()}, cube_count{1}, cube_dim{1});
    client_.sync();
  }

  std::shared_ptr<vulkan_device> device_;
  client client_ = client::cpu();
  buffer<int> done_ = client::cpu().empty<int>(1);
};

TEST_F(VulkanTimingFallback, WithTheClockSlotLentTheNextLaunchTakesTimestampsAndTheOneAfterSystem) {
  testing::captured_log log;
  const timing_counts before = device_->timed_counts();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  {
    launch_observation watching{keeps};
    for (int i = 0; i < 3; ++i) {
      client_.launch(spin{100'000ull, done_.view()}, cube_count{1}, cube_dim{1});
    }
  }
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].profile.method(), timing_method::device);  // the shader clock's one slot
  EXPECT_EQ(kept[1].profile.method(), timing_method::device);  // the one timestamp pair
  EXPECT_EQ(kept[2].profile.method(), timing_method::system);
  const timing_counts now = device_->timed_counts();
  EXPECT_EQ(now.shader_clock - before.shader_clock, 1u);
  EXPECT_EQ(now.timestamps - before.timestamps, 1u);
  EXPECT_EQ(now.system - before.system, 1u);
  for (auto& [kernel, profile] : kept) {
    const auto ticks = std::move(profile).resolve();
    ASSERT_TRUE(ticks.has_value()) << kernel;
    EXPECT_GE(ticks->length(), 80us);
  }
  EXPECT_EQ(log->count_containing("timestamp budget of 1 pairs"), 1u);
}

TEST_F(VulkanTimingFallback, AClockSlotHandedBackMeasuresOnlyItsNextLaunch) {
  const timing_counts before = device_->timed_counts();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  launch_observation watching{keeps};
  client_.launch(spin{5'000'000ull, done_.view()}, cube_count{4}, cube_dim{1});
  auto first = keeps->take_profiles();
  ASSERT_EQ(first.size(), 1u);
  const auto long_one = std::move(first[0].profile).resolve();
  ASSERT_TRUE(long_one.has_value());
  EXPECT_GE(long_one->length(), 4ms);
  // Read back: the slot came back, zeroed by the fold, for this launch.
  client_.launch(spin{200'000ull, done_.view()}, cube_count{4}, cube_dim{1});
  auto second = keeps->take_profiles();
  ASSERT_EQ(second.size(), 1u);
  const auto short_one = std::move(second[0].profile).resolve();
  ASSERT_TRUE(short_one.has_value());
  EXPECT_LT(short_one->length(), 4ms) << "the slot still held the previous launch's stamps";
  EXPECT_GE(short_one->start(), long_one->end());
  EXPECT_EQ(device_->timed_counts().shader_clock - before.shader_clock, 2u);
}

}  // namespace
}  // namespace launchwatch
