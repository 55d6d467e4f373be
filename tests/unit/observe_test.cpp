// The observer contract of docs/design.md §2, behaviour by behaviour, through the launch-path hooks.

#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/capturing_sink.hpp"
#include "support/measurements.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using testing::captured_log;
using testing::measured;
using testing::measured_on_device;
using testing::measured_while;
using testing::OnThread;
using testing::Profiled;
using testing::ProfiledUnread;
using testing::recording_observer;
using testing::Timed;
using ::testing::AllOf;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

static_assert(!std::is_copy_constructible_v<launch_observation>);
static_assert(!std::is_move_constructible_v<launch_observation>);
static_assert(!std::is_copy_assignable_v<launch_observation>);
static_assert(!std::is_move_assignable_v<launch_observation>);

// 1. `launched` is called on the issuing thread, before the launch reaches the backend, in issue
// order.
TEST(LaunchObservation, LaunchedIsCalledOnTheIssuingThreadInIssueOrder) {
  auto observer = std::make_shared<recording_observer>();
  {
    launch_observation watching{observer};
    launch_path::notify_launch("first");
    launch_path::notify_launch("second");
  }
  launch_path::notify_launch("after");
  EXPECT_THAT(observer->names(), ElementsAre("first", "second"));
  EXPECT_THAT(observer->events(), Each(OnThread(std::this_thread::get_id())));
}

// 2. With nothing installed a launch costs one relaxed load: nothing observes it and nothing is
// reported (the instruction-level check is bench/idle_path_check; the allocation count is in
// idle_path_test.cpp).
TEST(LaunchObservation, NothingInstalledMeansNothingIsObservingOrTimed) {
  EXPECT_FALSE(launch_path::is_observing());
  EXPECT_FALSE(launch_path::timing_wanted());
  launch_path::notify_launch("unobserved");  // must not touch an empty slot
  launch_path::notify_profiled("unobserved", measured(1us));
}

// 3. `timing()` defaults to `none`; the launch path asks before bracketing a launch.
TEST(LaunchObservation, TimingIsOffUnlessAnObserverAsks) {
  EXPECT_FALSE(launch_path::timing_wanted());
  {
    launch_observation names_only{std::make_shared<recording_observer>()};
    EXPECT_EQ(recording_observer{}.timing(), timing_request::none);
    EXPECT_FALSE(launch_path::timing_wanted());
  }
  {
    launch_observation resolved{std::make_shared<recording_observer>(timing_request::resolved)};
    EXPECT_TRUE(launch_path::timing_wanted());
  }
  {
    launch_observation deferred{std::make_shared<recording_observer>(timing_request::deferred)};
    EXPECT_TRUE(launch_path::timing_wanted());
  }
  EXPECT_FALSE(launch_path::timing_wanted());
}

// 4. `deferred`: the measurement is handed to `profiled` unread, right after the launch, on the
// issuing thread.
TEST(LaunchObservation, DeferredMeasurementsAreHandedOverUnreadOnTheIssuingThread) {
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  std::atomic<int> reads{0};
  {
    launch_observation watching{observer};
    launch_path::notify_profiled("first", measured_while(3us, [&] { ++reads; }));
    launch_path::notify_profiled("second", measured(5us));
  }
  EXPECT_EQ(reads.load(), 0) << "a deferred measurement must reach the observer unread";
  EXPECT_THAT(observer->events(), Each(OnThread(std::this_thread::get_id())));
  EXPECT_THAT(observer->events(), ElementsAre(AllOf(Profiled("first"), ProfiledUnread()),
                                              AllOf(Profiled("second"), ProfiledUnread())));
  EXPECT_THAT(observer->timings(), IsEmpty()) << "deferred goes to profiled, not timed";

  auto kept = observer->take_profiles();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].kernel, "first");
  EXPECT_EQ(kept[1].kernel, "second");
  EXPECT_EQ(std::move(kept[0].profile).resolve()->length(), 3us);
  EXPECT_EQ(reads.load(), 1);
  EXPECT_EQ(std::move(kept[1].profile).resolve()->length(), 5us);
}

// 5. `resolved`: the launch path reads the measurement with the slot's lock released, then calls
// `timed` with the duration and the method.
TEST(LaunchObservation, ResolvedMeasurementsAreReadWithTheSlotUnlockedThenTimed) {
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{observer};
  bool another_thread_could_install = false;
  launch_path::notify_profiled("a_kernel", measured_while(7us, [&] {
    // Installing needs the slot's exclusive lock: it can only finish if the read holds no lock.
    auto installing = std::async(std::launch::async, [] {
      launch_observation briefly{std::make_shared<recording_observer>()};
    });
    another_thread_could_install = installing.wait_for(10s) == std::future_status::ready;
  }));
  EXPECT_TRUE(another_thread_could_install) << "the slot's lock was held across the read";
  EXPECT_THAT(observer->timings(), ElementsAre(Timed("a_kernel", 7us, timing_method::system)));
}

// 6. A duration reaches only the observer the launch was reported to, and only while it is still
// installed; an observation that ended mid-read is not told.
TEST(LaunchObservation, AnObservationThatEndedMidReadIsNotToldTheDuration) {
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  auto watching = std::make_unique<launch_observation>(observer);
  launch_path::notify_profiled("a_kernel", measured_while(7us, [&] { watching.reset(); }));
  EXPECT_EQ(watching, nullptr) << "the read ended the observation";
  EXPECT_THAT(observer->timings(), IsEmpty());
}

TEST(LaunchObservation, AnObserverThatReplacedTheReaderMidReadIsNotToldTheDuration) {
  auto reader = std::make_shared<recording_observer>(timing_request::resolved);
  auto replacement = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{reader};
  std::optional<launch_observation> replacing;
  launch_path::notify_profiled("a_kernel",
                               measured_while(7us, [&] { replacing.emplace(replacement); }));
  EXPECT_THAT(reader->timings(), IsEmpty()) << "no longer installed when the read ended";
  EXPECT_THAT(replacement->timings(), IsEmpty()) << "never saw the launch";
  replacing.reset();
}

TEST(LaunchObservation, AnObservationThatEndedMidReadIsNotToldTheLoggersReading) {
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  auto watching = std::make_unique<launch_observation>(observer);
  auto for_the_logger = launch_path::read_and_notify_timed(
      "a_kernel", measured_while(7us, [&] { watching.reset(); }));
  EXPECT_THAT(observer->timings(), IsEmpty());
  auto ticks = std::move(for_the_logger).resolve();
  ASSERT_TRUE(ticks.has_value()) << "the logger still gets the reading";
  EXPECT_EQ(ticks->length(), 7us);
}

// 7. Past execution-only, the launch path reads each measurement once, tells the observer `timed`
// (even a deferred one), and hands the same reading to the logger; a deferred observer there
// triggers one warning per process.
TEST(LaunchObservation, TheLoggersReadingIsToldEvenToADeferredObserverAndHandedOn) {
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{observer};
  std::atomic<int> reads{0};
  auto for_the_logger = launch_path::read_and_notify_timed(
      "a_kernel", measured_while(7us, [&] { ++reads; }));
  EXPECT_THAT(observer->timings(), ElementsAre(Timed("a_kernel", 7us, timing_method::system)));
  EXPECT_TRUE(observer->take_profiles().empty()) << "profiled is not called on the logger's path";
  EXPECT_EQ(std::move(for_the_logger).resolve()->length(), 7us);
  EXPECT_EQ(reads.load(), 1) << "read once, and handed on";
}

TEST(LaunchObservation, TheLoggerTakingDeferredMeasurementsIsWarnedOncePerProcess) {
  captured_log log;
  launch_observation watching{std::make_shared<recording_observer>(timing_request::deferred)};
  launch_path::warn_logger_takes_deferred_measurements();
  launch_path::warn_logger_takes_deferred_measurements();
  EXPECT_EQ(log->count_containing("profiling logger is reading"), 1u);
}

TEST(LaunchObservation, TheLoggerTakingMeasurementsIsNotWarnedForAResolvedObserver) {
  captured_log log;
  launch_observation watching{std::make_shared<recording_observer>(timing_request::resolved)};
  launch_path::warn_logger_takes_deferred_measurements();
  EXPECT_EQ(log->count_containing("profiling logger is reading"), 0u);
}

// 8. A measurement that carries no ticks is skipped with a warning, never reported as zero.
TEST(LaunchObservation, AMeasurementWithoutTicksIsSkippedWithAWarningNotReportedAsZero) {
  captured_log log;
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{observer};
  auto empty = [] { return profile_duration{[] { return std::optional<profile_ticks>{}; },
                                            timing_method::device}; };
  launch_path::notify_profiled("resolved_path", empty());
  auto for_the_logger = launch_path::read_and_notify_timed("logger_path", empty());
  EXPECT_THAT(observer->timings(), IsEmpty());
  EXPECT_FALSE(std::move(for_the_logger).resolve().has_value()) << "no reading to hand on";
  EXPECT_EQ(log->count_containing("carried no measurement"), 2u);
}

// 9. An observer whose `timing()` answers `none` by the time its measurement arrives loses it, with
// one warning per process.
TEST(LaunchObservation, AnObserverThatStoppedAskingForTimingLosesItWithOneWarning) {
  captured_log log;
  // Bespoke: the point is an observer whose timing answer changes while installed.
  struct fickle : recording_observer {
    std::atomic<timing_request> answer{timing_request::resolved};
    timing_request timing() const override { return answer.load(); }
  };
  auto observer = std::make_shared<fickle>();
  launch_observation watching{observer};
  ASSERT_TRUE(launch_path::timing_wanted());
  observer->answer = timing_request::none;
  launch_path::notify_profiled("a_kernel", measured(7us));
  launch_path::notify_profiled("a_kernel", measured(7us));
  EXPECT_THAT(observer->timings(), IsEmpty());
  EXPECT_EQ(log->count_containing("asked for no timing"), 1u);
}

// 10. A refused profile skips the measurement with a warning (the runtime's conformance suite checks
// that the kernel is still launched and reported).
TEST(LaunchObservation, ARefusedProfileIsWarnedAboutNamingTheKernelAndReason) {
  captured_log log;
  launch_path::warn_profile_refused("a_kernel", "a graph capture window cannot be profiled");
  EXPECT_EQ(log->count_containing("a_kernel"), 1u);
  EXPECT_EQ(log->count_containing("graph capture window"), 1u);
}

// 11. One process-wide slot: a new observation replaces the installed one and puts it back.
TEST(LaunchObservation, RestoresTheObserverItReplaced) {
  auto outer = std::make_shared<recording_observer>();
  auto inner = std::make_shared<recording_observer>();
  {
    launch_observation watching_outer{outer};
    {
      launch_observation watching_inner{inner};
      launch_path::notify_launch("during_the_inner_pass");
    }
    EXPECT_TRUE(launch_path::is_observing()) << "the outer observation is still installed";
    launch_path::notify_launch("after_the_inner_pass");
  }
  EXPECT_FALSE(launch_path::is_observing()) << "guards dropped in reverse order restore the start";
  launch_path::notify_launch("unobserved");
  EXPECT_THAT(inner->names(), ElementsAre("during_the_inner_pass"));
  EXPECT_THAT(outer->names(), ElementsAre("after_the_inner_pass"));
}

TEST(LaunchObservation, AnObservationDroppedOutOfOrderIsNeverPutBack) {
  auto first = std::make_shared<recording_observer>();
  auto second = std::make_shared<recording_observer>();
  auto watching_first = std::make_unique<launch_observation>(first);
  auto watching_second = std::make_unique<launch_observation>(second);
  watching_first.reset();  // not the top: the second stays installed
  launch_path::notify_launch("still_second");
  watching_second.reset();  // must not reinstall the first, whose observation ended
  EXPECT_FALSE(launch_path::is_observing());
  launch_path::notify_launch("unobserved");
  EXPECT_THAT(first->names(), IsEmpty());
  EXPECT_THAT(second->names(), ElementsAre("still_second"));
}

TEST(LaunchObservation, TheObservingFlagIsSetOnlyOnceTheSlotIsFilled) {
  // A thread that sees the flag set must find the observer: a flag set before the slot was filled
  // would let this launch fall through an empty slot.
  for (int attempt = 0; attempt < 200; ++attempt) {
    auto observer = std::make_shared<recording_observer>();
    std::atomic<bool> go{false};
    std::thread launcher{[&] {
      go = true;
      while (!launch_path::is_observing()) std::this_thread::yield();
      launch_path::notify_launch("seen_after_the_flag");
    }};
    while (!go) std::this_thread::yield();
    launch_observation watching{observer};
    launcher.join();
    ASSERT_THAT(observer->names(), ElementsAre("seen_after_the_flag")) << "attempt " << attempt;
  }
}

TEST(LaunchObservation, RejectsAnEmptyObserver) {
  EXPECT_THROW(static_cast<void>(launch_observation{nullptr}), std::invalid_argument);
  EXPECT_FALSE(launch_path::is_observing());
}

// 14. Every duration carries how it was measured.
TEST(LaunchObservation, EveryDurationCarriesHowItWasMeasured) {
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{observer};
  launch_path::notify_profiled("on_device", measured_on_device(7us));
  launch_path::notify_profiled("on_host", measured(9us));
  EXPECT_THAT(observer->timings(),
              ElementsAre(Timed("on_device", 7us, timing_method::device),
                          Timed("on_host", 9us, timing_method::system)));
}

// An observer's exception is contained: logged once per process, launches go on.
TEST(LaunchObservation, AnObserverThatThrowsIsContainedAndLoggedOnce) {
  captured_log log;
  // Bespoke: the point is an observer that throws.
  struct throwing : recording_observer {
    void launched(std::string_view kernel) override {
      recording_observer::launched(kernel);
      throw std::runtime_error{"observer failure"};
    }
  };
  auto observer = std::make_shared<throwing>();
  launch_observation watching{observer};
  EXPECT_NO_THROW(launch_path::notify_launch("first"));
  EXPECT_NO_THROW(launch_path::notify_launch("second"));
  EXPECT_THAT(observer->names(), ElementsAre("first", "second")) << "launches go on";
  EXPECT_EQ(log->count_containing("observer failure"), 1u);
}

// Fault table row 2: the measurement callbacks are contained the same way, and the next
// measurement still arrives.
TEST(LaunchObservation, AnObserverWhoseMeasurementCallbacksThrowIsContainedAndLoggedOnce) {
  captured_log log;
  // Bespoke: the point is observers whose measurement callbacks throw.
  struct throws_once : recording_observer {
    throws_once() : recording_observer{timing_request::deferred} {}
    std::atomic<bool> thrown{false};
    void profiled(std::string_view kernel, profile_duration profile) override {
      if (!thrown.exchange(true)) throw std::runtime_error{"profiled failure"};
      recording_observer::profiled(kernel, std::move(profile));
    }
  };
  auto deferred = std::make_shared<throws_once>();
  {
    launch_observation watching{deferred};
    EXPECT_NO_THROW(launch_path::notify_profiled("first", measured(1us)));
    EXPECT_NO_THROW(launch_path::notify_profiled("second", measured(2us)));
  }
  const auto kept = deferred->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].kernel, "second");

  struct timed_throws : recording_observer {
    timed_throws() : recording_observer{timing_request::resolved} {}
    std::atomic<bool> thrown{false};
    void timed(std::string_view kernel, std::chrono::nanoseconds length,
               timing_method method) override {
      if (!thrown.exchange(true)) throw std::runtime_error{"timed failure"};
      recording_observer::timed(kernel, length, method);
    }
  };
  auto resolved = std::make_shared<timed_throws>();
  {
    launch_observation watching{resolved};
    EXPECT_NO_THROW(launch_path::notify_profiled("first", measured(1us)));
    EXPECT_NO_THROW(launch_path::notify_profiled("second", measured(2us)));
  }
  EXPECT_THAT(resolved->timings(), ElementsAre(Timed("second", 2us, timing_method::system)));
  EXPECT_EQ(log->count_containing("profiled failure"), 1u);
  EXPECT_EQ(log->count_containing("timed failure"), 0u) << "said twice in one process";
}

TEST(LaunchObservation, AnObserverWhoseTimingThrowsIsTreatedAsAskingForNone) {
  captured_log log;
  // Bespoke: the point is an observer whose timing() throws.
  struct throwing_timing : recording_observer {
    timing_request timing() const override { throw std::runtime_error{"timing failure"}; }
  };
  launch_observation watching{std::make_shared<throwing_timing>()};
  EXPECT_FALSE(launch_path::timing_wanted());
  EXPECT_EQ(log->count_containing("timing failure"), 1u);
}

}  // namespace
}  // namespace launchwatch

namespace launchwatch {
namespace {

TEST(LaunchObservation, ALaunchReportedWithItsInfoReachesLaunchedWithAndByDefaultLaunched) {
  // Bespoke: the point is launch_observer's default launched_with, which recording_observer
  // overrides; this one keeps the info and calls the default.
  struct info_recorder : recording_observer {
    std::vector<launch_info> infos;
    void launched_with(const launch_info& info) override {
      infos.push_back(info);
      launch_observer::launched_with(info);  // the default forwards the name
    }
  };
  auto observer = std::make_shared<info_recorder>();
  launch_observation watching{observer};
  launch_info info;
  info.kernel = "with_info";
  info.backend = "cpu";
  info.stream = 7;
  info.cube_count = {4, 2, 1};
  launch_path::notify_launch(info);
  ASSERT_EQ(observer->infos.size(), 1u);
  EXPECT_EQ(observer->infos[0].stream, 7u);
  EXPECT_EQ(observer->infos[0].cube_count, (std::array<std::uint32_t, 3>{4, 2, 1}));
  EXPECT_THAT(observer->names(), ::testing::ElementsAre("with_info"));
}

}  // namespace
}  // namespace launchwatch

namespace launchwatch {
namespace {

TEST(LaunchObservation, TimingRequestsAreNamedAsReportsSpellThem) {
  EXPECT_EQ(to_string(timing_request::none), "none");
  EXPECT_EQ(to_string(timing_request::resolved), "resolved");
  EXPECT_EQ(to_string(timing_request::deferred), "deferred");
}

}  // namespace
}  // namespace launchwatch
