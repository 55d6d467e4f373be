// The attribution observer, driven through the launch-path hooks as a runtime drives it, with an
// injected clock and measurements built by hand.

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/logger.hpp>
#include <launchwatch/report/chrome_trace.hpp>

#include <future>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_clock.hpp"
#include "support/capturing_sink.hpp"
#include "support/measurements.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using testing::captured_log;
using testing::fake_clock;

static_assert(!std::is_copy_constructible_v<attribution>);
static_assert(!std::is_move_constructible_v<attribution>);

launch_info info_for(std::string_view kernel, std::uint64_t stream = 1) {
  launch_info info;
  info.kernel = kernel;
  info.stream = stream;
  return info;
}

/// A device measurement from `start` to `end` on the fake clock's timeline; `read` is set when it
/// is read.
profile_duration device_window(std::chrono::nanoseconds start, std::chrono::nanoseconds end,
                               bool* read = nullptr) {
  return profile_duration{[=]() -> std::optional<profile_ticks> {
                            if (read != nullptr) *read = true;
                            return profile_ticks::from_start_end(fake_clock::at(start), fake_clock::at(end));
                          },
                          timing_method::device};
}

std::shared_ptr<attribution> make_attribution(timing_request timing = timing_request::deferred) {
  attribution_options options;
  options.timing = timing;
  options.clock = &fake_clock::now;
  return std::make_shared<attribution>(options);
}

TEST(Attribution, AsksForDeferredTimingByDefault) {
  EXPECT_EQ(attribution{}.timing(), timing_request::deferred);
}

TEST(Attribution, AsksForTheTimingItWasConfiguredWith) {
  for (const auto timing : {timing_request::none, timing_request::resolved, timing_request::deferred}) {
    attribution_options options;
    options.timing = timing;
    EXPECT_EQ(attribution{options}.timing(), timing);
  }
}

TEST(Attribution, PairsADeferredMeasurementWithItsLaunch) {
  auto observer = make_attribution();
  {
    launch_observation watching{observer};
    fake_clock::set(100ns);
    launch_path::notify_launch(info_for("k"));
    fake_clock::set(130ns);
    launch_path::notify_profiled("k", device_window(200ns, 450ns));
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), 1u);
  const auto& launch = pass.launches[0];
  EXPECT_EQ(pass.kernels[launch.kernel], "k");
  EXPECT_EQ(launch.issued, fake_clock::at(100ns));
  EXPECT_EQ(launch.returned, fake_clock::at(130ns));
  ASSERT_TRUE(launch.timing.has_value());
  EXPECT_EQ(launch.timing->length, 250ns);
  EXPECT_EQ(launch.timing->method, timing_method::device);
  ASSERT_TRUE(launch.timing->ticks.has_value());
  EXPECT_EQ(launch.timing->ticks->start(), fake_clock::at(200ns));
  EXPECT_EQ(launch.timing->ticks->end(), fake_clock::at(450ns));
  EXPECT_EQ(pass.timing, timing_request::deferred);
}

TEST(Attribution, ReadsKeptMeasurementsOnlyWhenCollecting) {
  auto observer = make_attribution();
  bool read = false;
  {
    launch_observation watching{observer};
    launch_path::notify_launch(info_for("k"));
    launch_path::notify_profiled("k", device_window(0ns, 10ns, &read));
  }
  EXPECT_FALSE(read);
  const auto pass = observer->collect();
  EXPECT_TRUE(read);
  EXPECT_TRUE(pass.launches.at(0).timing.has_value());
}

TEST(Attribution, PairsAResolvedLengthWithItsLaunch) {
  auto observer = make_attribution(timing_request::resolved);
  {
    launch_observation watching{observer};
    launch_path::notify_launch(info_for("k"));
    launch_path::notify_profiled("k", testing::measured(700ns));
  }
  const auto pass = observer->collect();
  ASSERT_TRUE(pass.launches.at(0).timing.has_value());
  const auto& timing = *pass.launches[0].timing;
  EXPECT_EQ(timing.length, 700ns);
  EXPECT_EQ(timing.method, timing_method::system);
  EXPECT_FALSE(timing.ticks.has_value()) << "a length told through `timed` has no place on the timeline";
}

TEST(Attribution, TakesTheLoggersReadingWhenTheLoggerReadsEveryMeasurement) {
  auto observer = make_attribution(timing_request::deferred);
  {
    launch_observation watching{observer};
    launch_path::notify_launch(info_for("k"));
    (void)launch_path::read_and_notify_timed("k", testing::measured_on_device(300ns));
  }
  const auto pass = observer->collect();
  ASSERT_TRUE(pass.launches.at(0).timing.has_value());
  EXPECT_EQ(pass.launches[0].timing->length, 300ns);
  EXPECT_EQ(pass.launches[0].timing->method, timing_method::device);
}

TEST(Attribution, RecordsWhereEachLaunchRanAndWhetherItRan) {
  auto observer = make_attribution(timing_request::none);
  {
    launch_observation watching{observer};
    launch_info info = info_for("k", 42);
    info.backend = "cuda";
    info.device = 3;
    info.cube_count = {8, 2, 1};
    info.cube_dim = {128, 1, 1};
    info.dry_run = true;
    info.capturing = true;
    launch_path::notify_launch(info);
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), 1u);
  const auto& launch = pass.launches[0];
  EXPECT_EQ(pass.streams.at(launch.stream), (stream_info{"cuda", 3, 42}));
  EXPECT_EQ(launch.cube_count, (std::array<std::uint32_t, 3>{8, 2, 1}));
  EXPECT_EQ(launch.cube_dim, (std::array<std::uint32_t, 3>{128, 1, 1}));
  EXPECT_TRUE(launch.dry_run);
  EXPECT_TRUE(launch.captured);
  EXPECT_FALSE(launch.timing.has_value());
}

TEST(Attribution, ALaunchReportedByNameOnlyGoesOnAnUnknownStream) {
  auto observer = make_attribution(timing_request::none);
  {
    launch_observation watching{observer};
    launch_path::notify_launch(std::string_view{"named"});
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_EQ(pass.streams.at(pass.launches[0].stream).backend, "");
}

TEST(Attribution, CountsAMeasurementForAnotherKernelAsUnpaired) {
  auto observer = make_attribution();
  observer->launched_with(info_for("first"));
  observer->profiled("second", device_window(0ns, 10ns));
  const auto pass = observer->collect();
  EXPECT_EQ(pass.lost.unpaired, 1u);
  EXPECT_FALSE(pass.launches.at(0).timing.has_value());
}

TEST(Attribution, CountsAMeasurementWithNoLaunchBeforeItAsUnpaired) {
  auto observer = make_attribution();
  observer->timed("k", 5ns, timing_method::device);
  EXPECT_EQ(observer->collect().lost.unpaired, 1u);
}

TEST(Attribution, AMeasurementThatCarriesNothingIsLostNotZero) {
  captured_log log;
  auto observer = make_attribution();
  observer->launched_with(info_for("k"));
  observer->profiled("k", profile_duration{[]() -> std::optional<profile_ticks> { return std::nullopt; },
                                           timing_method::device});
  const auto pass = observer->collect();
  EXPECT_FALSE(pass.launches.at(0).timing.has_value());
  EXPECT_EQ(pass.lost.empty, 1u);
  EXPECT_EQ(log->count_containing("could not be read"), 1u);
}

TEST(Attribution, AReadThatThrowsKeepsTheLaunchWithoutTime) {
  captured_log log;
  auto observer = make_attribution();
  observer->launched_with(info_for("faulted"));
  observer->profiled("faulted", profile_duration{[]() -> std::optional<profile_ticks> {
                                                   throw std::runtime_error{"kernel faulted"};
                                                 },
                                                 timing_method::device});
  observer->launched_with(info_for("fine"));
  observer->profiled("fine", device_window(0ns, 10ns));
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), 2u);
  EXPECT_FALSE(pass.launches[0].timing.has_value());
  EXPECT_TRUE(pass.launches[1].timing.has_value());
  EXPECT_EQ(pass.lost.failed, 1u);
  EXPECT_EQ(log->count_containing("kernel faulted"), 1u);
}

TEST(Attribution, CollectStartsTheNextPass) {
  auto observer = make_attribution(timing_request::none);
  fake_clock::set(0ns);
  observer->launched_with(info_for("first pass"));
  fake_clock::set(1000ns);
  const auto first = observer->collect();
  observer->launched_with(info_for("second pass"));
  const auto second = observer->collect();
  ASSERT_EQ(first.launches.size(), 1u);
  ASSERT_EQ(second.launches.size(), 1u);
  EXPECT_EQ(second.kernels[second.launches[0].kernel], "second pass");
  EXPECT_EQ(second.origin, fake_clock::at(1000ns));
}

TEST(Attribution, KeepsTheLaunchesOfAThreadThatHasExited) {
  auto observer = make_attribution(timing_request::none);
  {
    launch_observation watching{observer};
    std::thread{[] { launch_path::notify_launch(info_for("from a finished thread")); }}.join();
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_EQ(pass.threads.size(), 1u);
}

TEST(Attribution, EachThreadGetsItsOwnHostTrackThoughItRunsAfterAnotherHasExited) {
  // A thread started after another was joined is often given the same std::thread::id; it is still
  // another thread, with a log and a host track of its own.
  constexpr std::size_t threads = 6;
  auto observer = make_attribution(timing_request::none);
  std::set<std::thread::id> ids;
  {
    launch_observation watching{observer};
    for (std::size_t i = 0; i < threads; ++i) {
      std::thread launching{[] { launch_path::notify_launch(info_for("k")); }};
      ids.insert(launching.get_id());
      launching.join();
    }
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), threads);
  std::set<std::uint32_t> tracks;
  for (const auto& launch : pass.launches) tracks.insert(launch.thread);
  EXPECT_EQ(tracks.size(), threads) << "the " << threads << " threads had " << ids.size()
                                    << " distinct std::thread::ids";
  EXPECT_EQ(pass.threads.size(), threads);
}

TEST(Attribution, OrdersLaunchesByWhenTheyWereIssuedAcrossThreads) {
  auto observer = make_attribution(timing_request::none);
  {
    launch_observation watching{observer};
    fake_clock::set(300ns);
    launch_path::notify_launch(info_for("third"));
    std::thread{[] {
      fake_clock::set(100ns);
      launch_path::notify_launch(info_for("first"));
      fake_clock::set(200ns);
      launch_path::notify_launch(info_for("second"));
    }}.join();
  }
  const auto pass = observer->collect();
  std::vector<std::string> order;
  for (const auto& l : pass.launches) order.push_back(pass.kernels[l.kernel]);
  EXPECT_THAT(order, ElementsAre("first", "second", "third"));
  EXPECT_THAT(pass.kernels, ElementsAre("third", "first", "second"));
}

TEST(Attribution, ALaunchInFlightDuringACollectIsLeftForTheNextPass) {
  auto observer = make_attribution();
  std::promise<void> launched;
  std::promise<void> collected;
  std::optional<pass_record> first;
  {
    launch_observation watching{observer};
    std::thread launching{[&] {
      launch_path::notify_launch(info_for("k"));
      launched.set_value();
      collected.get_future().wait();
      launch_path::notify_profiled("k", device_window(200ns, 450ns));
    }};
    launched.get_future().wait();
    first = observer->collect();
    collected.set_value();
    launching.join();
  }
  const auto second = observer->collect();
  EXPECT_TRUE(first->launches.empty()) << "the launch was collected before its measurement came";
  ASSERT_EQ(second.launches.size(), 1u);
  ASSERT_TRUE(second.launches[0].timing.has_value());
  EXPECT_EQ(second.launches[0].timing->length, 250ns);
  EXPECT_EQ(second.lost, lost_measurements{});
}

TEST(Attribution, APassHoldingALaunchLeftByTheCollectBeforeStartsNoLaterThanThatLaunch) {
  auto observer = make_attribution();
  std::promise<void> launched;
  std::promise<void> collected;
  {
    launch_observation watching{observer};
    std::thread launching{[&] {
      fake_clock::set(100ns);
      launch_path::notify_launch(info_for("k"));
      launched.set_value();
      collected.get_future().wait();
      launch_path::notify_profiled("k", device_window(200ns, 450ns));
    }};
    launched.get_future().wait();
    fake_clock::set(300ns);
    (void)observer->collect();
    collected.set_value();
    launching.join();
  }
  const auto second = observer->collect();
  ASSERT_EQ(second.launches.size(), 1u);
  EXPECT_EQ(second.origin, fake_clock::at(100ns));
}

TEST(Attribution, ALaunchWhoseMeasurementCanNoLongerArriveIsCollectedUntimed) {
  auto observer = make_attribution();
  {
    launch_observation watching{observer};
    // Reported, and its thread gone before any measurement was handed over.
    std::thread{[] { launch_path::notify_launch(info_for("k")); }}.join();
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_FALSE(pass.launches[0].timing.has_value());
}

/// Runs `collect` while another thread has reported `info` and not yet handed over a measurement
/// (as if it were submitting the kernel), and returns what `collect` returned.
template <class Collect>
pass_record collect_while_a_launch_is_in_flight(const launch_info& info, Collect collect) {
  std::promise<void> launched;
  std::promise<void> collected;
  std::thread launching{[&] {
    launch_path::notify_launch(info);
    launched.set_value();
    collected.get_future().wait();
  }};
  launched.get_future().wait();
  auto pass = collect();
  collected.set_value();
  launching.join();
  return pass;
}

TEST(Attribution, AnUntimedAttributionCollectsALaunchInFlightWhateverTheLoggersLevel) {
  // A measurement reaches an observer only when it asked for timing, whether or not the profiling
  // logger is reading measurements.
  auto& logger = profiling_logger::instance();
  const auto level_before = logger.level();
  logger.set_level(profile_level::basic);
  auto observer = make_attribution(timing_request::none);
  launch_observation watching{observer};
  const auto pass =
      collect_while_a_launch_is_in_flight(info_for("k"), [&] { return observer->collect(); });
  logger.set_level(level_before);
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_FALSE(pass.launches[0].timing.has_value());
}

TEST(Attribution, ALaunchRecordedIntoAGraphIsCollectedAtOnceSinceItsProfileIsRefused) {
  auto observer = make_attribution(timing_request::deferred);
  launch_observation watching{observer};
  auto captured = info_for("k");
  captured.capturing = true;
  const auto pass =
      collect_while_a_launch_is_in_flight(captured, [&] { return observer->collect(); });
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_TRUE(pass.launches[0].captured);
  EXPECT_FALSE(pass.launches[0].timing.has_value());
}

TEST(Attribution, ALaunchInFlightIsCollectedAtOnceWhenAnotherObserverHasReplacedTheAttribution) {
  auto observer = make_attribution(timing_request::deferred);
  launch_observation watching{observer};
  const auto pass = collect_while_a_launch_is_in_flight(info_for("k"), [&] {
    // The replacing observer times launches too, but a measurement reaches only the installed one.
    launch_observation replacing{
        std::make_shared<testing::recording_observer>(timing_request::deferred)};
    return observer->collect();
  });
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_FALSE(pass.launches[0].timing.has_value());
}

TEST(Attribution, CollectTakesTheCallingThreadsOwnLaunchWhileStillObserving) {
  auto observer = make_attribution();
  launch_observation watching{observer};
  // The calling thread is in collect, not between a launch and its measurement.
  launch_path::notify_launch(info_for("k"));
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_FALSE(pass.launches[0].timing.has_value());
}

TEST(Attribution, AttributePassWatchesExactlyTheCall) {
  launch_path::notify_launch(info_for("before"));
  const auto pass = attribute_pass([] { launch_path::notify_launch(info_for("during")); },
                                   attribution_options{timing_request::none});
  launch_path::notify_launch(info_for("after"));
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_EQ(pass.kernels[pass.launches[0].kernel], "during");
  EXPECT_FALSE(launch_path::is_observing());
}

TEST(Attribution, StoresEachKernelNameAndScopePathOnce) {
  const auto pass = attribute_pass(
      [] {
        for (int i = 0; i < 10; ++i) {
          scope s{"loop"};
          launch_path::notify_launch(info_for("k"));
        }
      },
      attribution_options{timing_request::none});
  EXPECT_EQ(pass.launches.size(), 10u);
  EXPECT_EQ(pass.kernels.size(), 1u);
  EXPECT_EQ(pass.scopes.size(), 1u);
  EXPECT_EQ(pass.threads.at(0).scopes.size(), 10u);
}

// ---- graph replays (graph_replay_observer) ----

/// Reports a launch being recorded into a graph, as the CUDA bridge does, with its launch id.
void capture_launch(std::string_view kernel, std::uint64_t launch_id) {
  launch_info info = info_for(kernel, 7);
  info.backend = "cuda";
  info.capturing = true;
  info.launch_id = launch_id;
  launch_path::notify_launch(info);
}

replayed_node replay_of(std::string_view kernel, std::uint64_t launch_id, std::chrono::nanoseconds start,
                        std::chrono::nanoseconds end) {
  replayed_node node;
  node.kernel = kernel;
  node.captured_launch = launch_id;
  node.replay = 1;
  node.stream = 7;
  node.ticks = profile_ticks::from_start_end(fake_clock::at(start), fake_clock::at(end));
  return node;
}

TEST(Attribution, AReplayedGraphNodeIsChargedWithItsDeviceTimeToTheScopeItsLaunchWasCapturedIn) {
  fake_clock::set(0ns);
  auto observer = make_attribution();
  {
    launch_observation watching{observer};
    {
      scope decode{"decode"};
      capture_launch("attention", 42);
    }
    // The replay's nodes are told later, on another thread, with no scope open anywhere.
    std::thread collector{[&] { observer->replayed(replay_of("attention", 42, 1000ns, 1500ns)); }};
    collector.join();
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), 2u);
  const auto& captured = pass.launches[0];
  const auto& replayed = pass.launches[1];
  EXPECT_TRUE(captured.captured);
  EXPECT_FALSE(captured.timing.has_value());
  EXPECT_TRUE(replayed.replayed);
  ASSERT_TRUE(replayed.scope.has_value());
  EXPECT_EQ(pass.scope_path_text(*replayed.scope), "decode");
  ASSERT_TRUE(replayed.timing.has_value());
  EXPECT_EQ(replayed.timing->length, 500ns);
  EXPECT_EQ(replayed.timing->ticks->start(), fake_clock::at(1000ns));
  EXPECT_EQ(pass.kernels.at(replayed.kernel), "attention");
  EXPECT_TRUE(pass.threads.at(replayed.thread).replays);
  EXPECT_EQ(pass.threads.at(replayed.thread).name, "CUDA graph replays");
  EXPECT_EQ(pass.streams.at(replayed.stream), pass.streams.at(captured.stream));
}

TEST(Attribution, AReplayedNodeOfALaunchItNeverSawIsOutsideEveryScope) {
  auto observer = make_attribution();
  {
    launch_observation watching{observer};
    scope busy{"busy"};
    observer->replayed(replay_of("unknown", 99, 10ns, 20ns));
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_FALSE(pass.launches[0].scope.has_value());
  EXPECT_TRUE(pass.launches[0].timing.has_value());
}

TEST(Attribution, ReplayedNodesAddTheirDeviceTimeToTheSummaryButNoHostThread) {
  fake_clock::set(0ns);
  auto observer = make_attribution();
  {
    launch_observation watching{observer};
    {
      scope decode{"decode"};
      capture_launch("attention", 5);
    }
    observer->replayed(replay_of("attention", 5, 100ns, 400ns));
    observer->replayed(replay_of("attention", 5, 500ns, 800ns));
  }
  const auto summary = summarize(observer->collect());
  EXPECT_EQ(summary.host_threads, 1u);
  ASSERT_EQ(summary.scopes.size(), 1u);
  EXPECT_EQ(summary.scopes[0].name, "decode");
  EXPECT_EQ(summary.scopes[0].total, 600ns);
}

TEST(Attribution, AReplayedNodeIsTracedAsAKernelOnItsStreamWithNoHostSlice) {
  fake_clock::set(0ns);
  auto observer = make_attribution();
  {
    launch_observation watching{observer};
    capture_launch("attention", 8);
    observer->replayed(replay_of("attention", 8, 100ns, 400ns));
  }
  std::ostringstream trace;
  (void)write_chrome_trace(trace, observer->collect());
  const auto text = trace.str();
  const auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(R"("cat":"launch")"), 1u) << text;  // the captured launch's host slice only
  EXPECT_EQ(count(R"("cat":"kernel")"), 1u) << text;
  EXPECT_EQ(count(R"("launched_by":"CUDA graph replays")"), 1u) << text;
  EXPECT_EQ(count(R"("name":"CUDA graph replays")"), 0u) << text;  // no host track for it
}

}  // namespace
}  // namespace launchwatch
