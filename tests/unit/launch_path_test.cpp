// The one launch path (launch_path::issue): behaviours 3-10 of docs/design.md §2 as decisions, against a
// fake submitter that records what the launch path asked of it and hands out measurements whose
// reads the tests can see.

#include <launchwatch/launch_path.hpp>
#include <launchwatch/logger.hpp>
#include <launchwatch/observe.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/capturing_sink.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using testing::captured_log;
using testing::Launched;
using testing::LaunchedWith;
using testing::ProfiledUnread;
using testing::recording_observer;
using testing::Timed;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

/// What a launch source gives the launch path: it records which submission was asked for, and
/// hands out a measurement of `length` whose reads it counts (or a refusal, or one without ticks).
class fake_submitter final : public launch_path::submitter {
 public:
  enum class measurement { taken, refused, without_ticks };

  explicit fake_submitter(measurement kind = measurement::taken,
                          std::chrono::nanoseconds length = 7us)
      : kind_{kind}, length_{length} {}

  void submit() override { calls.push_back("submit"); }

  launch_path::measured_submission submit_profiled(launch_path::read_when when) override {
    calls.push_back("submit_profiled");
    asked_when.push_back(when);
    if (while_submitting) while_submitting();
    switch (kind_) {
      case measurement::refused:
        return {std::nullopt, "the stream is recording a graph capture"};
      case measurement::without_ticks:
        return {profile_duration{[] { return std::optional<profile_ticks>{}; },
                                 timing_method::device},
                {}};
      case measurement::taken:
        break;
    }
    const auto start = std::chrono::steady_clock::now();
    return {profile_duration{[this, ticks = profile_ticks::from_start_end(start, start + length_)] {
              reads.fetch_add(1);
              read_on = std::this_thread::get_id();
              return std::optional<profile_ticks>{ticks};
            },
                             timing_method::device},
            {}};
  }

  std::vector<std::string> calls;
  std::vector<launch_path::read_when> asked_when;
  std::atomic<int> reads{0};
  std::thread::id read_on;
  /// Runs inside submit_profiled, as another thread would while this one submits.
  std::function<void()> while_submitting;

 private:
  measurement kind_;
  std::chrono::nanoseconds length_;
};

launch_info info_of(std::string_view kernel) {
  launch_info info;
  info.kernel = kernel;
  info.stream = 3;
  return info;
}

/// The profiling logger writing to a string for one test, put back as a fresh process has it after.
class with_logger {
 public:
  explicit with_logger(profile_level level) {
    detail::reset_profiling_logger_for_testing();
    profiling_logger::instance().set_output(log_output::stream(out_));
    profiling_logger::instance().set_level(level);
  }
  ~with_logger() { detail::reset_profiling_logger_for_testing(); }
  with_logger(const with_logger&) = delete;
  with_logger& operator=(const with_logger&) = delete;

  std::string written() {
    profiling_logger::instance().write_summary();
    profiling_logger::instance().flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
};

TEST(LaunchPath, WithNothingWatchingALaunchIsNotWatchedAndIssueSubmitsItUntimed) {
  EXPECT_FALSE(launch_path::watched());
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(source.calls, ElementsAre("submit"));
}

TEST(LaunchPath, AnInstalledObserverOrTheLoggerMakesLaunchesWatched) {
  {
    launch_observation watching{std::make_shared<recording_observer>()};
    EXPECT_TRUE(launch_path::watched());
  }
  EXPECT_FALSE(launch_path::watched());
  {
    with_logger logging{profile_level::execution_only};
    EXPECT_TRUE(launch_path::watched());
  }
  EXPECT_FALSE(launch_path::watched());
}

// 3. timing() defaults to none; the launch path asks before bracketing.
TEST(LaunchPath, AnObserverAskingForNoTimingIsToldOfTheLaunchWhichIsSubmittedUntimed) {
  auto observer = std::make_shared<recording_observer>();
  launch_observation watching{observer};
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(observer->names(), ElementsAre("a_kernel"));
  EXPECT_THAT(observer->launches(),
              ElementsAre(LaunchedWith(::testing::Field(&launch_info::stream, 3u))))
      << "reported with everything the source said of it";
  EXPECT_THAT(source.calls, ElementsAre("submit"));
}

TEST(LaunchPath, ALaunchIsReportedOnceAndItsTimingAskedOnce) {
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{observer};
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_EQ(observer->launches().size(), 1u);
  EXPECT_EQ(observer->timing_asks(), 1);
}

// 1. `launched` comes before the launch reaches the backend.
TEST(LaunchPath, TheLaunchIsReportedBeforeItIsSubmitted) {
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{observer};
  fake_submitter source;
  std::size_t reported_at_submission = 0;
  source.while_submitting = [&] { reported_at_submission = observer->launches().size(); };
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_EQ(reported_at_submission, 1u);
}

// 4. deferred: handed to `profiled` unread, right after the launch, on the issuing thread.
TEST(LaunchPath, ADeferredObserverIsHandedTheMeasurementUnreadRightAfterTheSubmission) {
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{observer};
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(source.calls, ElementsAre("submit_profiled"));
  EXPECT_EQ(source.reads.load(), 0) << "read on the launch path";
  EXPECT_THAT(observer->events(), ElementsAre(Launched("a_kernel"), ProfiledUnread()));
  auto kept = observer->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].kernel, "a_kernel");
  EXPECT_EQ(std::move(kept[0].profile).resolve()->length(), 7us);
}

// 5. resolved: read with the slot's lock released, then `timed` with the duration and the method.
TEST(LaunchPath, AResolvedObserverIsToldTheDurationReadOnTheIssuingThreadWithTheSlotUnlocked) {
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{observer};
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_EQ(source.reads.load(), 1);
  EXPECT_EQ(source.read_on, std::this_thread::get_id());
  EXPECT_THAT(observer->timings(), ElementsAre(Timed("a_kernel", 7us, timing_method::device)));
}

// 6. A duration reaches only the observation the launch was reported to (finding 9 of the review:
// identity taken at `launched`, not when the measurement is delivered).
/// Runs `change` on another thread once the launch is being submitted, gives it time to get in
/// (it must not: an install or drop waits for a deferred launch in flight), and joins it after.
class changed_while_submitting {
 public:
  template <class Change>
  changed_while_submitting(fake_submitter& source, Change change) {
    source.while_submitting = [this, change] {
      changer_ = std::thread{change};
      std::this_thread::sleep_for(20ms);
    };
  }
  ~changed_while_submitting() {
    if (changer_.joinable()) changer_.join();
  }
  changed_while_submitting(const changed_while_submitting&) = delete;
  changed_while_submitting& operator=(const changed_while_submitting&) = delete;

 private:
  std::thread changer_;
};

TEST(LaunchPath, AnObserverInstalledWhileADeferredLaunchIsSubmittedIsNotHandedItsMeasurement) {
  auto reported_to = std::make_shared<recording_observer>(timing_request::deferred);
  auto replacement = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{reported_to};
  std::optional<launch_observation> replacing;
  fake_submitter source;
  {
    changed_while_submitting install{source, [&] { replacing.emplace(replacement); }};
    launch_path::issue(info_of("a_kernel"), source);
  }
  EXPECT_TRUE(replacement->take_profiles().empty()) << "the replacement never saw the launch";
  EXPECT_EQ(reported_to->take_profiles().size(), 1u)
      << "handed over before the install could replace the observation the launch was reported to";
  replacing.reset();
}

TEST(LaunchPath, AnObservationDroppedWhileADeferredLaunchIsSubmittedEndsAfterItsMeasurementArrives) {
  captured_log log;
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  auto watching = std::make_unique<launch_observation>(observer);
  fake_submitter source;
  {
    changed_while_submitting drop{source, [&] { watching.reset(); }};
    launch_path::issue(info_of("a_kernel"), source);
  }
  EXPECT_EQ(observer->take_profiles().size(), 1u) << "the observation ended only once it had it";
  EXPECT_EQ(log->count_containing("Dropped a timing"), 0u);
}

TEST(LaunchPath, AResolvedReadWhoseObservationEndedMidReadIsNotToldAnyone) {
  auto reader = std::make_shared<recording_observer>(timing_request::resolved);
  auto replacement = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{reader};
  std::optional<launch_observation> replacing;
  fake_submitter source;
  source.while_submitting = [&] {
    std::thread{[&] { replacing.emplace(replacement); }}.join();
  };
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(reader->timings(), IsEmpty());
  EXPECT_THAT(replacement->timings(), IsEmpty());
  replacing.reset();
}

// 7. Past execution_only: read once, told `timed` (even a deferred observer), the same reading to
// the logger, and one warning per process for a deferred observer.
TEST(LaunchPath, WithTheLoggerReadingADeferredObserverIsToldTimedAndTheLoggerGetsTheSameReading) {
  captured_log log;
  with_logger logging{profile_level::medium};
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{observer};
  fake_submitter first;
  fake_submitter second;
  launch_path::issue(info_of("a_kernel"), first);
  launch_path::issue(info_of("a_kernel"), second);
  EXPECT_EQ(first.reads.load() + second.reads.load(), 2) << "each measurement read exactly once";
  EXPECT_TRUE(observer->take_profiles().empty()) << "profiled is not called while the logger reads";
  EXPECT_EQ(observer->timings().size(), 2u);
  EXPECT_THAT(logging.written(), HasSubstr("launch a_kernel took 7.000 us (device)"));
  EXPECT_EQ(log->count_containing("profiling logger is reading"), 1u);
}

// Review finding 8: a names-only observer and the logger together must not serialise kernels.
TEST(LaunchPath, WithTheLoggerReadingAnObserverAskingForNoTimingDoesNotMakeTheLaunchWait) {
  captured_log log;
  with_logger logging{profile_level::medium};
  auto observer = std::make_shared<recording_observer>();
  launch_observation watching{observer};
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(observer->names(), ElementsAre("a_kernel"));
  const auto written = logging.written();
  EXPECT_NE(source.read_on, std::this_thread::get_id())
      << "the issuing thread read the measurement: it waited for the kernel";
  EXPECT_EQ(source.reads.load(), 1) << "the logger's writer reads it";
  EXPECT_THAT(written, HasSubstr("launch a_kernel took 7.000 us (device)"));
  EXPECT_EQ(log->count_containing("profiling logger is reading"), 0u);
}

TEST(LaunchPath, WithOnlyTheLoggerReadingTheMeasurementIsReadOffTheIssuingThread) {
  with_logger logging{profile_level::medium};
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(logging.written(), HasSubstr("launch a_kernel took 7.000 us (device)"));
  EXPECT_NE(source.read_on, std::this_thread::get_id());
}

TEST(LaunchPath, WithTheLoggerAtExecutionOnlyTheLaunchIsWrittenAndSubmittedUntimed) {
  with_logger logging{profile_level::execution_only};
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(source.calls, ElementsAre("submit"));
  EXPECT_THAT(logging.written(), HasSubstr("launch a_kernel on cpu:0 stream 3"));
}

TEST(LaunchPath, WithTheLoggerAtExecutionOnlyADeferredObserversLaunchIsWrittenToo) {
  with_logger logging{profile_level::execution_only};
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{observer};
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_EQ(observer->take_profiles().size(), 1u);
  EXPECT_THAT(logging.written(), HasSubstr("launch a_kernel on cpu:0 stream 3"));
}

TEST(LaunchPath, TheSourceIsToldWhetherTheMeasurementWillBeReadAtOnceOrLater) {
  using launch_path::read_when;
  const auto asked = [](std::shared_ptr<launch_observer> observer, profile_level level) {
    std::optional<with_logger> logging;
    if (level != profile_level::disabled) logging.emplace(level);
    std::optional<launch_observation> watching;
    if (observer) watching.emplace(std::move(observer));
    fake_submitter source;
    launch_path::issue(info_of("a_kernel"), source);
    // The logger's writer reads the measurement, which refers to `source`: let it, first.
    if (logging) (void)logging->written();
    return source.asked_when;
  };
  const auto asking = [](timing_request request) {
    return std::make_shared<recording_observer>(request);
  };
  const auto deferred = [&] { return asking(timing_request::deferred); };
  const auto resolved = [&] { return asking(timing_request::resolved); };
  EXPECT_THAT(asked(deferred(), profile_level::disabled), ElementsAre(read_when::later));
  EXPECT_THAT(asked(resolved(), profile_level::disabled), ElementsAre(read_when::at_once));
  EXPECT_THAT(asked(nullptr, profile_level::medium), ElementsAre(read_when::later))
      << "the logger's writer reads in turn, off the launch path";
  EXPECT_THAT(asked(std::make_shared<recording_observer>(), profile_level::medium),
              ElementsAre(read_when::later));
  EXPECT_THAT(asked(deferred(), profile_level::medium), ElementsAre(read_when::at_once));
}

// 8. A measurement without ticks is skipped with a warning, never reported as zero.
TEST(LaunchPath, AMeasurementWithoutTicksIsSkippedWithAWarningNotReportedAsZero) {
  captured_log log;
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{observer};
  fake_submitter source{fake_submitter::measurement::without_ticks};
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(observer->timings(), IsEmpty());
  EXPECT_EQ(log->count_containing("carried no measurement"), 1u);
}

// 9. A measurement whose observation is gone by the time it arrives is lost, said once.
// 10. A refused profile: warned about, the kernel still submitted and reported.
TEST(LaunchPath, ARefusedProfileIsWarnedAboutAndTheLaunchIsStillSubmittedAndReported) {
  captured_log log;
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{observer};
  fake_submitter source{fake_submitter::measurement::refused};
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(source.calls, ElementsAre("submit_profiled"));
  EXPECT_TRUE(observer->take_profiles().empty());
  EXPECT_EQ(log->count_containing("graph capture"), 1u);
}

TEST(LaunchPath, ARefusedProfileIsWrittenByTheLoggerAsUntimed) {
  with_logger logging{profile_level::medium};
  fake_submitter source{fake_submitter::measurement::refused};
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(logging.written(), HasSubstr("launch a_kernel untimed (no measurement)"));
}

TEST(LaunchPath, AnObserverThatThrowsDoesNotStopTheLaunch) {
  captured_log log;
  struct thrower : launch_observer {
    void launched(std::string_view) override { throw std::runtime_error{"observer broke"}; }
  };
  launch_observation watching{std::make_shared<thrower>()};
  fake_submitter source;
  launch_path::issue(info_of("a_kernel"), source);
  EXPECT_THAT(source.calls, ElementsAre("submit"));
  EXPECT_EQ(log->count_containing("observer broke"), 1u);
}

TEST(LaunchPath, AnExceptionFromTheSubmissionPropagatesAfterTheLaunchWasReported) {
  auto observer = std::make_shared<recording_observer>();
  launch_observation watching{observer};
  struct failing : launch_path::submitter {
    void submit() override { throw std::runtime_error{"queue full"}; }
    launch_path::measured_submission submit_profiled(launch_path::read_when) override { return {}; }
  } source;
  EXPECT_THROW(launch_path::issue(info_of("a_kernel"), source), std::runtime_error);
  EXPECT_THAT(observer->names(), ElementsAre("a_kernel"));
}

// The two-step form (begin_issue before the submission, finish_issue after it), as the CUDA
// bridge's CUPTI callbacks use it.
TEST(LaunchPath, BeginIssueReportsTheLaunchAndDecidesBeforeAnythingIsSubmitted) {
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{observer};
  const auto decision = launch_path::begin_issue(info_of("a_kernel"));
  EXPECT_EQ(observer->launches().size(), 1u);
  EXPECT_TRUE(decision.measure());
  EXPECT_EQ(decision.when(), launch_path::read_when::later);
  fake_submitter source;
  launch_path::finish_issue(info_of("a_kernel"), decision,
                            source.submit_profiled(decision.when()));
  auto kept = observer->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(std::move(kept[0].profile).resolve()->length(), 7us);
}

TEST(LaunchPath, BeginIssueAsksANamesOnlyObserverForNoMeasurement) {
  launch_observation watching{std::make_shared<recording_observer>()};
  EXPECT_FALSE(launch_path::begin_issue(info_of("a_kernel")).measure());
}

TEST(LaunchPath, AMeasurementFinishedAfterItsObservationWasReplacedGoesToNobody) {
  auto reported_to = std::make_shared<recording_observer>(timing_request::resolved);
  auto replacement = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{reported_to};
  const auto decision = launch_path::begin_issue(info_of("a_kernel"));
  launch_observation replacing{replacement};
  fake_submitter source;
  launch_path::finish_issue(info_of("a_kernel"), decision,
                            source.submit_profiled(decision.when()));
  EXPECT_THAT(reported_to->timings(), IsEmpty());
  EXPECT_THAT(replacement->timings(), IsEmpty()) << "it never saw the launch";
}

TEST(LaunchPath, FinishingAnUntimedLaunchWritesTheLoggersLine) {
  with_logger logging{profile_level::execution_only};
  const auto decision = launch_path::begin_issue(info_of("a_kernel"));
  EXPECT_FALSE(decision.measure());
  launch_path::finish_issue(info_of("a_kernel"), decision);
  EXPECT_THAT(logging.written(), HasSubstr("launch a_kernel on cpu:0 stream 3"));
}

// docs/design.md §10: a collective is never read at once; deferred is kept.
launch_info collective_of(std::string_view kernel) {
  launch_info info = info_of(kernel);
  info.collective = true;
  return info;
}

TEST(LaunchPath, AResolvedObserverGetsNoMeasurementOfACollectiveAndOneWarningPerProcess) {
  captured_log log;
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{observer};
  fake_submitter first;
  fake_submitter second;
  launch_path::issue(collective_of("all_reduce"), first);
  launch_path::issue(collective_of("all_reduce"), second);
  EXPECT_THAT(first.calls, ElementsAre("submit")) << "still launched, untimed";
  EXPECT_THAT(second.calls, ElementsAre("submit"));
  EXPECT_THAT(observer->timings(), IsEmpty());
  EXPECT_EQ(log->count_containing("it is a collective"), 1u);
}

TEST(LaunchPath, ACollectiveIsStillReportedWhenItsMeasurementIsRefused) {
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{observer};
  fake_submitter source;
  launch_path::issue(collective_of("all_reduce"), source);
  EXPECT_EQ(observer->launches().size(), 1u);
}

TEST(LaunchPath, ADeferredObserverKeepsACollectivesMeasurement) {
  auto observer = std::make_shared<recording_observer>(timing_request::deferred);
  launch_observation watching{observer};
  fake_submitter source;
  launch_path::issue(collective_of("all_reduce"), source);
  EXPECT_THAT(source.asked_when, ElementsAre(launch_path::read_when::later));
  EXPECT_EQ(observer->take_profiles().size(), 1u);
}

TEST(LaunchPath, WithTheLoggerReadingACollectiveIsWrittenUntimedRatherThanWaitedFor) {
  captured_log log;
  with_logger logging{profile_level::medium};
  launch_observation watching{std::make_shared<recording_observer>(timing_request::deferred)};
  fake_submitter source;
  launch_path::issue(collective_of("all_reduce"), source);
  EXPECT_THAT(source.calls, ElementsAre("submit"));
  EXPECT_THAT(logging.written(), HasSubstr("launch all_reduce untimed (no measurement)"));
}

TEST(LaunchPath, WithOnlyTheLoggerReadingACollectiveIsStillMeasuredOffTheIssuingThread) {
  with_logger logging{profile_level::medium};
  fake_submitter source;
  launch_path::issue(collective_of("all_reduce"), source);
  EXPECT_THAT(source.asked_when, ElementsAre(launch_path::read_when::later));
  EXPECT_THAT(logging.written(), HasSubstr("launch all_reduce took 7.000 us (device)"));
}

}  // namespace
}  // namespace launchwatch
