// Timing windows (cuda_bridge_options::timing_windows) on the CPU: the bridge's core and its
// windows' thread against the fake CUPTI (fake_cupti.hpp), whose kernels leave a record only when
// they are submitted while kernel records are on, as CUPTI's do. The same on a GPU, with CUPTI
// itself toggled, is CudaBridgeTimingWindows in cuda_bridge_test.cu.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include "cuda_bridge/timing_windows.hpp"
#include "deferred_observer.hpp"
#include "fake_cupti.hpp"
#include "support/thread_names.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using testing::fake_cupti;

using testing::deferred_observer;

cuda_bridge_options windows_of(std::chrono::milliseconds on, std::chrono::milliseconds off) {
  cuda_bridge_options options;
  options.timing_windows = cuda_timing_windows{on, off};
  options.record_timeout = 2s;
  return options;
}

TEST(TimingWindows, LaunchesBetweenWindowsAreReportedAndCountedWithoutAMeasurement) {
  fake_cupti cupti{windows_of(200ms, 800ms)};
  auto observer = std::make_shared<deferred_observer>();
  launch_observation watching{observer};
  for (int i = 0; i < 5; ++i) cupti.launch("between");
  EXPECT_EQ(observer->launches(), 5u);
  EXPECT_TRUE(observer->take_profiles().empty());
  EXPECT_EQ(cupti.core().stats().untimed_outside_windows, 5u);
  EXPECT_EQ(cupti.core().stats().launches_reported, 5u);
}

TEST(TimingWindows, TheWindowsThreadIsNamedLwWindowsForTheToolsThatWatchTheProcess) {
  if (testing::thread_names().empty()) GTEST_SKIP() << "no /proc/self/task here";
  fake_cupti cupti{windows_of(200ms, 800ms)};
  detail::cuda_bridge::timing_windows windows{cupti.core(),
                                              *windows_of(200ms, 800ms).timing_windows};
  EXPECT_TRUE(testing::thread_named_within("lw-windows"));
}

TEST(TimingWindows, LaunchesInsideAWindowAreEachMeasuredFromTheirRecord) {
  fake_cupti cupti{windows_of(200ms, 800ms)};
  cupti.kernel_records_off();
  auto observer = std::make_shared<deferred_observer>();
  launch_observation watching{observer};
  ASSERT_TRUE(cupti.core().open_timing_window());
  EXPECT_TRUE(cupti.records_on());
  for (int i = 0; i < 3; ++i) cupti.launch("inside", fake_cupti::stream(7), 12us);
  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), 3u);
  for (auto& profile : profiles) {
    const std::optional<profile_ticks> ticks = std::move(profile).resolve();
    ASSERT_TRUE(ticks.has_value());
    EXPECT_EQ(ticks->length(), 12us);
  }
  const auto stats = cupti.core().stats();
  EXPECT_EQ(stats.timing_windows_opened, 1u);
  EXPECT_EQ(stats.untimed_outside_windows, 0u);
  EXPECT_EQ(stats.measurements_missing, 0u);
}

/// A window open and one launch inside it, its ENTER played by the test (the driver is submitting
/// it); the test plays the rest.
class TimingWindowsWithALaunchInside : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cupti_.core().open_timing_window());
    call_.correlation = 77;
    call_.symbol = "being_submitted";
    call_.context = fake_cupti::context;
    call_.stream = fake_cupti::stream(7);
    call_.stream_number = 7;
    cupti_.core().launch_entered(call_);
  }

  fake_cupti cupti_{windows_of(200ms, 800ms)};
  std::shared_ptr<deferred_observer> observer_ = std::make_shared<deferred_observer>();
  launch_observation watching_{observer_};
  detail::cuda_bridge::launch_call call_;
};

TEST_F(TimingWindowsWithALaunchInside, ClosingAWindowTurnsRecordsOffOnlyOnceALaunchThatSawItOpenWasSubmitted) {
  std::atomic<bool> closed{false};
  std::thread closer{[&] {
    cupti_.core().close_timing_window(10s);
    closed = true;
  }};
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(closed.load()) << "the window closed while a launch that saw it open was inside";
  EXPECT_TRUE(cupti_.records_on());
  cupti_.core().launch_exited(call_);
  closer.join();
  EXPECT_TRUE(closed.load());
  EXPECT_FALSE(cupti_.records_on());
  ASSERT_EQ(observer_->take_profiles().size(), 1u);
  cupti_.launch("after the window");
  EXPECT_TRUE(observer_->take_profiles().empty());
  EXPECT_EQ(cupti_.core().stats().untimed_outside_windows, 1u);
}

TEST_F(TimingWindowsWithALaunchInside, ALaunchWhoseExitNeverCameDoesNotHoldTheNextWindowsClose) {
  cupti_.core().launch_callbacks_off();  // its EXIT will never come
  const auto began = std::chrono::steady_clock::now();
  cupti_.core().close_timing_window(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 5s) << "the close waited for a launch gone";
  EXPECT_FALSE(cupti_.records_on());
  // A window after it closes at once once its own launches are in.
  ASSERT_TRUE(cupti_.core().open_timing_window());
  cupti_.launch("next window", fake_cupti::stream(7), 9us);
  const auto again = std::chrono::steady_clock::now();
  cupti_.core().close_timing_window(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - again, 5s);
}

TEST(TimingWindows, TheirThreadAlternatesWindowsAndStopsWithRecordsOff) {
  fake_cupti cupti{windows_of(2ms, 2ms)};
  cupti.kernel_records_off();
  {
    detail::cuda_bridge::timing_windows windows{cupti.core(), *windows_of(2ms, 2ms).timing_windows};
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (cupti.core().stats().timing_windows_opened < 3 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(1ms);
    }
    windows.stop();
  }
  EXPECT_GE(cupti.core().stats().timing_windows_opened, 3u);
  EXPECT_GE(cupti.records_turned_on(), 3u);
  EXPECT_FALSE(cupti.records_on());
}

TEST(TimingWindows, AWindowOfNoLengthIsRefusedSayingWhatToGive) {
  fake_cupti cupti;
  try {
    detail::cuda_bridge::timing_windows windows{cupti.core(), cuda_timing_windows{0ms, 800ms}};
    FAIL() << "a window of 0 ms was accepted";
  } catch (const configuration_error& error) {
    EXPECT_NE(std::string{error.what()}.find("windows:200/800"), std::string::npos) << error.what();
  }
}

TEST(TimingWindowsSpec, OnAndOffMillisecondsAreReadFromOnSlashOff) {
  const cuda_timing_windows windows = parse_timing_windows("200/800");
  EXPECT_EQ(windows.on, 200ms);
  EXPECT_EQ(windows.off, 800ms);
  EXPECT_EQ(parse_timing_windows("1/86400000").off, 86'400'000ms);
}

TEST(TimingWindowsSpec, AnythingButTwoWholeMillisecondCountsFromOneToADayIsRefusedSayingSo) {
  for (const char* text : {"200", "200/", "/800", "0/800", "200/0", "-1/800", "2.5/800", "200/800/1",
                           "200/86400001", " 200/800", "a/b", ""}) {
    try {
      (void)parse_timing_windows(text);
      ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const configuration_error& error) {
      EXPECT_NE(std::string{error.what()}.find(std::string{"`"} + text + "`"), std::string::npos)
          << error.what();
      EXPECT_NE(std::string{error.what()}.find("as windows:200/800"), std::string::npos)
          << error.what();
    }
  }
}

// Launches from four threads while windows open and close every millisecond: each launch is either
// measured from its own record or counted untimed, and no launch that saw a window open was
// submitted with records off (its record would never come).
TEST(TimingWindows, UnderLaunchesFromFourThreadsEveryMeasuredLaunchGetsItsRecord) {
  fake_cupti cupti{windows_of(1ms, 1ms)};
  cupti.kernel_records_off();
  auto observer = std::make_shared<deferred_observer>();
  launch_observation watching{observer};
  constexpr int threads = 4;
  std::atomic<std::uint64_t> launched{0};
  {
    detail::cuda_bridge::timing_windows windows{cupti.core(), *windows_of(1ms, 1ms).timing_windows};
    std::vector<std::thread> launchers;
    for (int t = 0; t < threads; ++t) {
      launchers.emplace_back([&] {
        // Through several windows, however fast or slow this machine launches.
        for (int i = 0; i < 1000 || cupti.core().stats().timing_windows_opened < 6; ++i) {
          cupti.launch("churn");
          launched.fetch_add(1);
        }
      });
    }
    for (auto& launcher : launchers) launcher.join();
    windows.stop();
  }
  cupti.core().deliver_pending(2s);
  auto profiles = observer->take_profiles();
  const std::size_t kept = profiles.size();
  const std::uint64_t measured = testing::count_measured(std::move(profiles));
  const auto stats = cupti.core().stats();
  EXPECT_EQ(observer->launches(), launched.load());
  EXPECT_GT(kept, 0u);
  EXPECT_GT(stats.untimed_outside_windows, 0u);
  EXPECT_EQ(measured, kept) << "a measured launch's record never came";
  EXPECT_EQ(kept + stats.untimed_outside_windows, launched.load());
  EXPECT_EQ(stats.measurements_missing, 0u);
}

}  // namespace
}  // namespace launchwatch
