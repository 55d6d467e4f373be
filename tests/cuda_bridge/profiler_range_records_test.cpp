// CUPTI's kernel records under the profiler API range (cuda_capture_range::cuda_profiler_api): on
// only while the range is open, so that a program that marks the part worth watching pays CUPTI's
// record (+1.9 µs a launch on the H200's host) only there. Against the fake CUPTI
// (fake_cupti.hpp), whose kernels leave a record only when submitted while records are on.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include "deferred_observer.hpp"
#include "fake_cupti.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using testing::fake_cupti;

using testing::count_measured;
using testing::deferred_observer;

cuda_bridge_options in_the_profiler_range() {
  cuda_bridge_options options;
  options.capture_range = cuda_capture_range::cuda_profiler_api;
  options.record_timeout = 2s;
  return options;
}

TEST(ProfilerRangeRecords, KernelRecordsAreOnOnlyWhileTheProfilerRangeIsOpen) {
  fake_cupti cupti{in_the_profiler_range()};
  cupti.kernel_records_off();  // as CUPTI starts: the bridge turns them on
  auto observer = std::make_shared<deferred_observer>();
  launch_observation watching{observer};
  cupti.launch("before");
  EXPECT_FALSE(cupti.records_on()) << "a launch outside the range turned records on";
  for (int range = 0; range < 3; ++range) {
    cupti.core().profiler_started();
    for (int i = 0; i < 5; ++i) cupti.launch("inside");
    EXPECT_TRUE(cupti.records_on());
    cupti.core().profiler_stopped();
    EXPECT_FALSE(cupti.records_on()) << "records stayed on after range " << range;
    cupti.launch("outside");
  }
  cupti.core().deliver_pending(2s);
  EXPECT_EQ(observer->launches(), 15u);
  EXPECT_EQ(count_measured(observer->take_profiles()), 15u)
      << "a launch in the range lost its record";
  EXPECT_EQ(cupti.submitted_without_records(), 4u) << "the launches outside the range";
  EXPECT_EQ(cupti.records_turned_on(), 3u);
  const cuda_bridge_stats stats = cupti.core().stats();
  EXPECT_EQ(stats.outside_capture_range, 4u);
  EXPECT_EQ(stats.measurements_missing, 0u);
}

TEST(ProfilerRangeRecords, ALaunchStillBeingSubmittedWhenTheRangeClosesKeepsItsRecord) {
  fake_cupti cupti{in_the_profiler_range()};
  cupti.kernel_records_off();
  auto observer = std::make_shared<deferred_observer>();
  launch_observation watching{observer};
  cupti.core().profiler_started();
  // cudaProfilerStop on another thread while this launch is in its driver call.
  cupti.during_submission = [&] { cupti.core().profiler_stopped(); };
  cupti.launch("caught");
  cupti.during_submission = nullptr;
  EXPECT_EQ(cupti.submitted_without_records(), 0u) << "submitted after records went off";
  EXPECT_TRUE(cupti.records_on()) << "turned off while the launch was inside";
  cupti.launch("outside");  // finds none inside: turns them off
  EXPECT_FALSE(cupti.records_on());
  cupti.core().deliver_pending(2s);
  EXPECT_EQ(count_measured(observer->take_profiles()), 1u);
  EXPECT_EQ(cupti.core().stats().measurements_missing, 0u);
}

TEST(ProfilerRangeRecords, GraphReplaysToldPerNodeHaveRecordsFromTheRangesStart) {
  cuda_bridge_options options = in_the_profiler_range();
  options.graph_replays = cuda_graph_replays::per_node;
  fake_cupti cupti{options};
  cupti.kernel_records_off();
  auto observer = std::make_shared<deferred_observer>();
  launch_observation watching{observer};
  cupti.core().profiler_started();
  EXPECT_TRUE(cupti.records_on()) << "replays need records before any launch asks for them";
  cupti.core().profiler_stopped();
  EXPECT_FALSE(cupti.records_on());
}

TEST(ProfilerRangeRecords, UnderTimingWindowsTheRangeLeavesRecordsToTheWindows) {
  cuda_bridge_options options = in_the_profiler_range();
  options.timing_windows = cuda_timing_windows{200ms, 800ms};
  fake_cupti cupti{options};  // the core alone: no windows' thread turns records off
  auto observer = std::make_shared<deferred_observer>();
  launch_observation watching{observer};
  cupti.core().profiler_started();
  cupti.launch("inside");
  cupti.core().profiler_stopped();
  EXPECT_TRUE(cupti.records_on()) << "the range turned off the windows' records";
}

// Launches from four threads while the range opens and closes about every 200 µs: each launch is
// outside the range (counted), or reported and either measured from its own record or refused
// because the range closed as it was issued; none is submitted in the range with records off.
TEST(ProfilerRangeRecords, UnderLaunchesFromFourThreadsEveryLaunchTimedInTheRangeGetsItsRecord) {
  fake_cupti cupti{in_the_profiler_range()};
  cupti.kernel_records_off();
  auto observer = std::make_shared<deferred_observer>();
  launch_observation watching{observer};
  constexpr int threads = 4;
  std::atomic<std::uint64_t> launched{0};
  std::atomic<bool> done{false};
  std::atomic<int> ranges{0};
  std::thread toggler{[&] {
    while (!done.load()) {
      cupti.core().profiler_started();
      std::this_thread::sleep_for(200us);
      cupti.core().profiler_stopped();
      ranges.fetch_add(1);
      std::this_thread::sleep_for(200us);
    }
  }};
  std::vector<std::thread> launchers;
  for (int t = 0; t < threads; ++t) {
    launchers.emplace_back([&] {
      // Through several ranges, however fast or slow this machine launches.
      for (int i = 0; i < 2000 || ranges.load() < 20; ++i) {
        cupti.launch("churn");
        launched.fetch_add(1);
      }
    });
  }
  for (auto& launcher : launchers) launcher.join();
  done.store(true);
  toggler.join();
  cupti.core().deliver_pending(2s);
  std::vector<profile_duration> profiles = observer->take_profiles();
  const std::size_t kept = profiles.size();
  const std::uint64_t measured = count_measured(std::move(profiles));
  const cuda_bridge_stats stats = cupti.core().stats();
  EXPECT_EQ(observer->launches() + stats.outside_capture_range, launched.load());
  EXPECT_GT(measured, 0u);
  EXPECT_GT(stats.outside_capture_range, 0u);
  EXPECT_EQ(measured, kept) << "a launch timed in the range lost its record";
  EXPECT_EQ(stats.measurements_missing, 0u);
  EXPECT_GT(cupti.submitted_without_records(), 0u) << "records stayed on outside the range";
}

}  // namespace
}  // namespace launchwatch
