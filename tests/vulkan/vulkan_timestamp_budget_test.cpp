// The Vulkan timestamp budget forced to one pair (LAUNCHWATCH_VULKAN_TIMESTAMPS=1, see
// CMakeLists.txt), so the fallback of docs/design.md §9 is reached at the second measured launch.

#include <cstdlib>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/launchwatch.hpp>

#include "conformance/conformance_kernels.hpp"
#include "support/capturing_sink.hpp"
#include "support/recording_observer.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace launchwatch {
namespace {

using conformance::fill;

constexpr const char* spent_warning = "timestamp budget of 1 pairs";

class VulkanTimestampBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = conformance::vulkan_backend::unavailable()) GTEST_SKIP() << *why;
    ASSERT_STREQ(std::getenv("LAUNCHWATCH_VULKAN_TIMESTAMPS"), "1");
  }
};

TEST_F(VulkanTimestampBudget, OnePairGivesADeviceDurationThenSystemOnesWithOneWarning) {
  auto client = client::vulkan();
  testing::captured_log log;
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto values = client.empty<int>(8);
  {
    launch_observation watching{keeps};
    for (int i = 1; i <= 3; ++i) client.launch(fill{values.view(), i}, cube_count{1}, cube_dim{8});
  }
  EXPECT_EQ(client.read(values), std::vector<int>(8, 3)) << "every launch ran, in order";
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 3u);
  // The first holds the only pair, unread: the next two find the budget spent.
  EXPECT_EQ(kept[0].profile.method(), timing_method::device);
  EXPECT_EQ(kept[1].profile.method(), timing_method::system);
  EXPECT_EQ(kept[2].profile.method(), timing_method::system);
  for (auto& [kernel, profile] : kept) EXPECT_TRUE(std::move(profile).resolve().has_value()) << kernel;
  EXPECT_EQ(log->count_containing(spent_warning), 1u);
}

TEST_F(VulkanTimestampBudget, ReadingAMeasurementGivesItsPairBackForTheNextLaunch) {
  auto client = client::vulkan();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto values = client.empty<int>(8);
  launch_observation watching{keeps};
  for (int i = 0; i < 3; ++i) {
    client.launch(fill{values.view(), i}, cube_count{1}, cube_dim{8});
    auto kept = keeps->take_profiles();
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].profile.method(), timing_method::device) << "launch " << i;
    EXPECT_TRUE(std::move(kept[0].profile).resolve().has_value());
  }
}

TEST_F(VulkanTimestampBudget, AMeasurementDroppedUnreadGivesItsPairBackOnceItsLaunchRan) {
  auto client = client::vulkan();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto values = client.empty<int>(8);
  launch_observation watching{keeps};
  client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
  (void)keeps->take_profiles();  // dropped unread
  client.sync();
  client.launch(fill{values.view(), 2}, cube_count{1}, cube_dim{8});
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].profile.method(), timing_method::device);
}

TEST_F(VulkanTimestampBudget, ResolvedTimingWithOnePairIsAlwaysDevice) {
  auto client = client::vulkan();
  auto timed = std::make_shared<testing::recording_observer>(timing_request::resolved);
  auto values = client.empty<int>(8);
  {
    launch_observation watching{timed};
    for (int i = 0; i < 3; ++i) client.launch(fill{values.view(), i}, cube_count{1}, cube_dim{8});
  }
  const auto calls = timed->timings();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_THAT(calls, ::testing::Each(testing::TimedWith(timing_method::device)));
}

}  // namespace
}  // namespace launchwatch
