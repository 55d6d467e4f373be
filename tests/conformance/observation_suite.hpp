// The backend conformance suite, observation: steps 4 and 5 of the launch path (reporting each launch to the
// observer, and timing it as the observer or the profiling logger asks).
// Written once for every backend: see conformance_suite.hpp for how a backend runs it.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "conformance/conformance_fixture.hpp"

namespace launchwatch::conformance {

template <class Backend>
class backend_observation : public backend_test<Backend> {};

TYPED_TEST_SUITE_P(backend_observation);

// ---------------------------------------------------------------------------------------------
// Step 4: reporting.

TYPED_TEST_P(backend_observation, ReportsEachLaunchOnTheIssuingThreadInIssueOrder) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  auto seen = std::make_shared<info_recorder>();
  {
    launch_observation watching{seen};
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
    client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
    client.launch(twice{values.view()}, cube_count{1}, cube_dim{8});
  }
  const auto all = seen->all();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].info.kernel, type_name<fill>());
  EXPECT_EQ(all[1].info.kernel, type_name<add_one>());
  EXPECT_EQ(all[2].info.kernel, type_name<twice>());
  for (const auto& s : all) EXPECT_EQ(s.thread, std::this_thread::get_id());
}

TYPED_TEST_P(backend_observation, ReportsTheKernelsNameToANameOnlyObserver) {
  launchwatch::client& client = this->client();
  auto names = std::make_shared<testing::recording_observer>();
  {
    launch_observation watching{names};
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
  }
  EXPECT_EQ(names->names(), std::vector<std::string>{std::string{type_name<nothing>()}});
}

TYPED_TEST_P(backend_observation, ReportsWhereALaunchRunsAndItsGrid) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(64);
  auto seen = std::make_shared<info_recorder>();
  {
    launch_observation watching{seen};
    client.launch(fill{values.view(), 1}, cube_count{2u, 3u, 1u}, cube_dim{4u, 2u, 1u});
  }
  const auto all = seen->all();
  ASSERT_EQ(all.size(), 1u);
  const auto& info = all[0].info;
  EXPECT_EQ(info.backend, client.backend());
  EXPECT_EQ(info.device, client.device_index());
  EXPECT_EQ(info.stream, client.stream_id());
  EXPECT_EQ(info.cube_count, (std::array<std::uint32_t, 3>{2, 3, 1}));
  EXPECT_EQ(info.cube_dim, (std::array<std::uint32_t, 3>{4, 2, 1}));
  EXPECT_FALSE(info.dry_run);
  EXPECT_FALSE(info.capturing);
}

TYPED_TEST_P(backend_observation, AThrowingObserverDoesNotStopTheLaunch) {
  launchwatch::client& client = this->client();
  testing::captured_log log;
  auto values = client.empty<int>(8);
  {
    launch_observation watching{std::make_shared<thrower>()};
    client.launch(fill{values.view(), 3}, cube_count{1}, cube_dim{8});
    client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
  }
  EXPECT_EQ(client.read(values), std::vector<int>(8, 4));
  EXPECT_EQ(log->count_containing("threw"), 1u);
}

// ---------------------------------------------------------------------------------------------
// Step 5: timing.

TYPED_TEST_P(backend_observation, AnObserverThatAsksNoTimingIsNeverHandedAMeasurement) {
  launchwatch::client& client = this->client();
  // It asks for nothing, and records `profiled` and `timed`: were a launch bracketed anyway, it
  // would see it.
  auto observer = std::make_shared<testing::recording_observer>(timing_request::none);
  {
    launch_observation watching{observer};
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
    client.sync();
  }
  EXPECT_TRUE(observer->take_profiles().empty());
  EXPECT_TRUE(observer->events(testing::observer_call::profiled).empty());
  EXPECT_TRUE(observer->timings().empty());
}

TYPED_TEST_P(backend_observation, DeferredTimingHandsOverAnUnreadDeviceMeasurementRightAfterTheLaunch) {
  launchwatch::client& client = this->client();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client.template empty<int>(1);
  {
    launch_observation watching{keeps};
    client.launch(spin{5'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
    // Before any sync: handed over on this thread, during the launch.
    auto kept = keeps->take_profiles();
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].kernel, type_name<spin>());
    EXPECT_EQ(kept[0].profile.method(), timing_method::device);
    const auto ticks = std::move(kept[0].profile).resolve();
    ASSERT_TRUE(ticks.has_value());
    EXPECT_GE(ticks->length(), 4ms);  // The kernel spun 5 ms; device clocks are not that coarse.
  }
  EXPECT_TRUE(keeps->timings().empty())
      << "a deferred observer was told `timed` with the logger off";
}

TYPED_TEST_P(backend_observation, DeferredTimingDoesNotWaitForTheKernel) {
  launchwatch::client& client = this->client();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client.template empty<int>(1);
  instant returned;
  {
    launch_observation watching{keeps};
    client.launch(spin{200'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
    returned = std::chrono::steady_clock::now();
  }
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  const auto ticks = std::move(kept[0].profile).resolve();
  ASSERT_TRUE(ticks.has_value());
  // The kernel ended long after the launch returned: nothing waited for it.
  EXPECT_GT(ticks->end(), returned + 100ms);
}

TYPED_TEST_P(backend_observation, DeferredMeasurementsOfOneStreamLieInIssueOrderOnOneClock) {
  launchwatch::client& client = this->client();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client.template empty<int>(1);
  {
    launch_observation watching{keeps};
    for (int i = 0; i < 4; ++i) {
      client.launch(spin{1'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
    }
  }
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 4u);
  std::vector<profile_ticks> ticks;
  for (auto& [name, profile] : kept) {
    auto read = std::move(profile).resolve();
    ASSERT_TRUE(read.has_value());
    ticks.push_back(*read);
  }
  for (std::size_t i = 1; i < ticks.size(); ++i) {
    EXPECT_GE(ticks[i].start(), ticks[i - 1].end()) << "launch " << i << " started before "
                                                    << i - 1 << " ended";
  }
}

TYPED_TEST_P(backend_observation, ResolvedTimingTellsTimedBeforeTheLaunchReturns) {
  launchwatch::client& client = this->client();
  auto times = std::make_shared<testing::recording_observer>(timing_request::resolved);
  auto done = client.template empty<int>(1);
  launch_observation watching{times};
  client.launch(spin{2'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
  const auto timings = times->timings();  // No sync: resolved timing waited for the kernel.
  ASSERT_EQ(timings.size(), 1u);
  EXPECT_EQ(timings[0].kernel, type_name<spin>());
  EXPECT_GE(timings[0].length, 1ms);
  EXPECT_THAT(timings[0], testing::TimedWith(timing_method::device));
}

TYPED_TEST_P(backend_observation, TimingIsAskedOncePerLaunchAndThatAnswerDecidesItsMeasurement) {
  launchwatch::client& client = this->client();
  testing::captured_log log;
  auto observer = std::make_shared<fickle>();
  {
    launch_observation watching{observer};
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
  }
  EXPECT_EQ(observer->asked(), 1) << "timing() asked more than once for one launch";
  EXPECT_EQ(observer->take_profiles().size(), 1u) << "the launch was bracketed under `deferred`";
  EXPECT_EQ(log->count_containing("Dropped a timing"), 0u);
}

TYPED_TEST_P(backend_observation, TheLoggerPastExecutionOnlyReadsEachMeasurementAndTellsADeferredObserverTimed) {
  launchwatch::client& client = this->client();
  testing::captured_log log;
  std::ostringstream out;
  const logger_reset reset_after;  // Destroyed before `out`, which the logger writes to.
  auto& logger = profiling_logger::instance();
  logger.set_output(log_output::stream(out));
  logger.set_level(profile_level::medium);
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client.template empty<int>(1);
  {
    launch_observation watching{keeps};
    client.launch(spin{1'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
    client.launch(spin{1'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
  }
  client.sync();
  logger.flush();
  EXPECT_TRUE(keeps->take_profiles().empty())
      << "a deferred observer kept a measurement the logger read";
  const auto timings = keeps->timings();
  ASSERT_EQ(timings.size(), 2u);
  for (const auto& timed : timings) {
    EXPECT_EQ(timed.kernel, type_name<spin>());
    EXPECT_THAT(timed, testing::TimedWith(timing_method::device));
  }
  EXPECT_EQ(log->count_containing("profiling logger is reading every launch"), 1u);
  EXPECT_THAT(out.str(), ::testing::HasSubstr("spin"));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("(device)"));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("profile summary")) << "sync wrote no summary";
}

TYPED_TEST_P(backend_observation, TheLoggerAtExecutionOnlyWritesALinePerLaunchAndTimesNothing) {
  launchwatch::client& client = this->client();
  std::ostringstream out;
  const logger_reset reset_after;  // Destroyed before `out`, which the logger writes to.
  auto& logger = profiling_logger::instance();
  logger.set_output(log_output::stream(out));
  logger.set_level(profile_level::execution_only);
  auto names = std::make_shared<testing::recording_observer>();
  {
    launch_observation watching{names};
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
  }
  client.sync();
  logger.flush();
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_THAT(text, ::testing::HasSubstr("nothing"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("took")));
  EXPECT_EQ(names->names().size(), 2u);
}

REGISTER_TYPED_TEST_SUITE_P(backend_observation,
    ReportsEachLaunchOnTheIssuingThreadInIssueOrder,
    ReportsTheKernelsNameToANameOnlyObserver,
    ReportsWhereALaunchRunsAndItsGrid,
    AThrowingObserverDoesNotStopTheLaunch,
    AnObserverThatAsksNoTimingIsNeverHandedAMeasurement,
    DeferredTimingHandsOverAnUnreadDeviceMeasurementRightAfterTheLaunch,
    DeferredTimingDoesNotWaitForTheKernel,
    DeferredMeasurementsOfOneStreamLieInIssueOrderOnOneClock,
    ResolvedTimingTellsTimedBeforeTheLaunchReturns,
    TimingIsAskedOncePerLaunchAndThatAnswerDecidesItsMeasurement,
    TheLoggerPastExecutionOnlyReadsEachMeasurementAndTellsADeferredObserverTimed,
    TheLoggerAtExecutionOnlyWritesALinePerLaunchAndTimesNothing);

}  // namespace launchwatch::conformance
