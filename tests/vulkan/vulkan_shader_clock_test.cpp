// Timing by the shader clock on a Vulkan device that offers it (Mesa's lavapipe in CI, NVIDIA's
// driver on the GPU machine): a timed launch's own shader stamps the device clock, the batch's fold
// reads the slots back, and each measurement says which way it was taken (the device's counts).
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/launchwatch.hpp>

#include "conformance/conformance_kernels.hpp"
#include "support/recording_observer.hpp"
#include "vulkan/vulkan_backend.hpp"
#include "vulkan/vulkan_shader_clock_support.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using conformance::fill;
using conformance::spin;
using detail::vulkan::timing_counts;
using detail::vulkan::vulkan_device;

/// fill, with only the untimed forms of its shader (as a header generated before the timed forms
/// existed has it).
struct fill_without_timed_forms {
  device_span<int> out;
  int value;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < out.size()) out[i] = value;
  }
  static constexpr vulkan_shader vulkan{conformance::shaders::fill.push,
                                        conformance::shaders::fill.ring, "fill.comp"};
};

class VulkanShaderClock : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = conformance::vulkan_backend::unavailable()) GTEST_SKIP() << *why;
    LAUNCHWATCH_NEED_SHADER_CLOCK(device_);
    client_ = client::vulkan();
    done_ = client_.empty<int>(1);
    // Pipelines warm: a shader's first dispatch compiles it on lavapipe.
    client_.launch(spin{1'000ull, done_.view()}, cube_count{1}, cube_dim{1});
    client_.sync();
  }

  /// What the device counted since `before`.
  timing_counts counted_since(const timing_counts& before) const {
    const timing_counts now = device_->timed_counts();
    return timing_counts{now.shader_clock - before.shader_clock, now.timestamps - before.timestamps,
                         now.system - before.system};
  }

  std::shared_ptr<vulkan_device> device_;
  client client_ = client::cpu();
  buffer<int> done_ = client::cpu().empty<int>(1);
};

TEST_F(VulkanShaderClock, ADeferredLaunchIsTimedByItsShaderAndLiesInsideItsLaunchAndWait) {
  const timing_counts before = device_->timed_counts();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  const auto launched = std::chrono::steady_clock::now();
  {
    launch_observation watching{keeps};
    client_.launch(spin{5'000'000ull, done_.view()}, cube_count{1}, cube_dim{1});
  }
  client_.sync();
  const auto synced = std::chrono::steady_clock::now();
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].profile.method(), timing_method::device);
  const timing_counts counted = counted_since(before);
  EXPECT_EQ(counted.shader_clock, 1u);
  EXPECT_EQ(counted.timestamps, 0u);
  EXPECT_EQ(counted.system, 0u);
  const auto ticks = std::move(kept[0].profile).resolve();
  ASSERT_TRUE(ticks.has_value());
  EXPECT_GE(ticks->length(), 4ms);
  EXPECT_GE(ticks->start(), launched);
  EXPECT_LE(ticks->end(), synced + 50us);
}

TEST_F(VulkanShaderClock, ResolvedTimingIsTakenByTheShaderClockToo) {
  const timing_counts before = device_->timed_counts();
  auto timed = std::make_shared<testing::recording_observer>(timing_request::resolved);
  {
    launch_observation watching{timed};
    for (int i = 0; i < 3; ++i) {
      client_.launch(spin{1'000'000ull, done_.view()}, cube_count{1}, cube_dim{1});
    }
  }
  const auto calls = timed->timings();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_THAT(calls, ::testing::Each(testing::TimedWith(timing_method::device)));
  EXPECT_EQ(counted_since(before).shader_clock, 3u);
}

TEST_F(VulkanShaderClock, LaunchesOverSeveralBatchesAreEachMeasuredInIssueOrder) {
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  constexpr int launches = 300;  // more than a batch of 256
  {
    launch_observation watching{keeps};
    for (int i = 0; i < launches; ++i) {
      client_.launch(spin{50'000ull, done_.view()}, cube_count{1}, cube_dim{1});
    }
  }
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), static_cast<std::size_t>(launches));
  std::vector<profile_ticks> windows;
  for (auto& [kernel, profile] : kept) {
    const auto ticks = std::move(profile).resolve();
    ASSERT_TRUE(ticks.has_value()) << "launch " << windows.size();
    windows.push_back(*ticks);
  }
  for (std::size_t i = 0; i < windows.size(); ++i) {
    EXPECT_GE(windows[i].length(), 40us) << "launch " << i;
    if (i > 0) {
      EXPECT_GE(windows[i].start(), windows[i - 1].end())
          << "launch " << i << " started before " << i - 1 << " ended";
    }
  }
}

TEST_F(VulkanShaderClock, AKernelWhoseShaderHasNoTimedFormsIsTimedWithTimestampQueries) {
  const timing_counts before = device_->timed_counts();
  auto values = client_.empty<int>(8);
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  {
    launch_observation watching{keeps};
    client_.launch(fill_without_timed_forms{values.view(), 4}, cube_count{1}, cube_dim{8});
  }
  EXPECT_EQ(client_.read(values), std::vector<int>(8, 4));
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].profile.method(), timing_method::device);
  EXPECT_TRUE(std::move(kept[0].profile).resolve().has_value());
  const timing_counts counted = counted_since(before);
  EXPECT_EQ(counted.shader_clock, 0u);
  EXPECT_EQ(counted.timestamps, 1u);
}

TEST_F(VulkanShaderClock, ATimedLaunchComputesWhatItsUntimedTwinComputes) {
  auto timed_values = client_.empty<int>(1000);
  auto untimed_values = client_.empty<int>(1000);
  client_.launch(fill{untimed_values.view(), 9}, cube_count{16}, cube_dim{64});
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  {
    launch_observation watching{keeps};
    client_.launch(fill{timed_values.view(), 9}, cube_count{16}, cube_dim{64});
  }
  EXPECT_EQ(client_.read(timed_values), client_.read(untimed_values));
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_TRUE(std::move(kept[0].profile).resolve().has_value());
}

}  // namespace
}  // namespace launchwatch
