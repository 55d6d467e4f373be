// The backend conformance suite, faults (issue 14's fault table, docs/fault_table.md): what a user
// throws at launchwatch from inside their program (a kernel that fails, an observer that throws,
// misuse of a capture window, a thread that ends with work open) gives a clear error, and nothing
// recorded before it is lost. Written once for every backend: see conformance_suite.hpp.
//
// Tests that fault on purpose carry `Failure` in their names, so scripts/gpu_check.sh leaves them
// out of its compute-sanitizer pass (the sanitizer rightly reports their faults). A CUDA fault is
// sticky for the process: ctest runs each test in a process of its own, so the rest survive.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/tree.hpp>

#include "conformance/conformance_fixture.hpp"

namespace launchwatch::conformance {

template <class Backend>
class backend_faults : public backend_test<Backend> {};

TYPED_TEST_SUITE_P(backend_faults);

/// Runs `work` on a thread of its own and returns what it returned, failing the test (and ending
/// the process, since the waiting thread cannot be stopped) if it has not returned within 30 s: a
/// hang is reported as one, naming `what`, instead of stalling ctest until its timeout.
template <class F>
auto within_30s(const char* what, F work) {
  auto running = std::async(std::launch::async, std::move(work));
  if (running.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << what << " still waits after 30 s";
    std::_Exit(1);
  }
  return running.get();
}

/// The kernel names of `pass`'s launches, in the order they were reported.
inline std::vector<std::string> kernels_of(const pass_record& pass) {
  std::vector<std::string> names;
  for (const auto& launch : pass.launches) names.push_back(pass.kernels.at(launch.kernel));
  return names;
}

/// Throws from `launched` and from whichever of `profiled` and `timed` its timing request brings,
/// after counting each call.
class throws_everywhere : public launch_observer {
 public:
  explicit throws_everywhere(timing_request request) : request_{request} {}
  void launched(std::string_view) override {
    launched_.fetch_add(1);
    throw std::runtime_error{"observer broke in launched"};
  }
  timing_request timing() const override { return request_; }
  void profiled(std::string_view, profile_duration) override {
    measured_.fetch_add(1);
    throw std::runtime_error{"observer broke in profiled"};
  }
  void timed(std::string_view, std::chrono::nanoseconds, timing_method) override {
    measured_.fetch_add(1);
    throw std::runtime_error{"observer broke in timed"};
  }
  int launched_count() const { return launched_.load(); }
  int measured_count() const { return measured_.load(); }

 private:
  timing_request request_;
  std::atomic<int> launched_{0};
  std::atomic<int> measured_{0};
};

/// Expects `misuse` to throw capture_error whose message contains `says`.
template <class F>
void expect_refused_in_capture(F misuse, const std::string& says, const char* what) {
  try {
    misuse();
    ADD_FAILURE() << what << " was accepted inside a capture window";
  } catch (const capture_error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr(says)) << what;
  }
}

// Row 1: a kernel that fails ends nothing the attribution recorded before it.
TYPED_TEST_P(backend_faults, AKernelFailureLeavesEveryLaunchAttributedBeforeItInThePass) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(64);
  auto attributing = std::make_shared<attribution>();
  {
    launch_observation watching{attributing};
    scope model{"model"};
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{64});
    client.launch(add_one{values.view()}, cube_count{1}, cube_dim{64});
    client.launch(fail_at{values.view(), 3}, cube_count{1}, cube_dim{64});
    EXPECT_THROW(client.sync(), kernel_failure);
  }
  const pass_record pass = within_30s("collecting a pass after a kernel failure",
                                      [&] { return attributing->collect(); });
  EXPECT_THAT(kernels_of(pass), ::testing::ElementsAre(std::string{type_name<fill>()},
                                                       std::string{type_name<add_one>()},
                                                       std::string{type_name<fail_at>()}));
  std::size_t timed = 0;
  for (const auto& launch : pass.launches) {
    ASSERT_TRUE(launch.scope.has_value());
    EXPECT_EQ(pass.scope_path_text(*launch.scope), "model");
    if (launch.timing) ++timed;
  }
  // A launch whose time was lost with the device says so in `lost`, never silently.
  EXPECT_EQ(timed + pass.lost.failed + pass.lost.empty, pass.launches.size());
  if constexpr (TypeParam::recovers_from_kernel_failure) {
    EXPECT_EQ(timed, 3u) << "a failed CPU kernel still ran between its stamps";
  }
  const pass_summary summary = summarize(pass);
  EXPECT_EQ(summary.launches, 3u);
  EXPECT_THAT(render_tree(summary), ::testing::HasSubstr("fail_at"));
}

// Row 1: the profiling logger still writes every launch, and the summary, when a kernel fails.
TYPED_TEST_P(backend_faults, AKernelFailureLeavesEveryLaunchInTheProfilingLog) {
  launchwatch::client& client = this->client();
  std::ostringstream log;
  logger_reset reset;  // declared after `log`, so the logger lets go of it first
  auto& logger = profiling_logger::instance();
  logger.set_output(log_output::stream(log));
  logger.set_level(profile_level::medium);
  auto values = client.template empty<int>(64);
  client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{64});
  client.launch(fail_at{values.view(), 3}, cube_count{1}, cube_dim{64});
  EXPECT_THROW(client.sync(), kernel_failure);
  within_30s("flushing the log after a kernel failure", [&] { logger.flush(); });
  const std::string written = log.str();
  EXPECT_THAT(written, ::testing::HasSubstr("launch fill "));
  EXPECT_THAT(written, ::testing::HasSubstr("launch fail_at "));
  // Device-timed launches of a lost CUDA context are counted as untimed, in a table of their own.
  EXPECT_THAT(written, ::testing::ContainsRegex("profile summary|untimed launches"))
      << "the sync that threw wrote no summary";
}

// Row 2: an observer that throws from every method it has is contained, and launches go on.
TYPED_TEST_P(backend_faults, AnObserverThatThrowsFromEveryMethodIsContainedLoggedOnceAndLaunchesGoOn) {
  launchwatch::client& client = this->client();
  testing::captured_log log;
  auto values = client.template empty<int>(8);
  constexpr int launches = 10;
  for (const auto request : {timing_request::deferred, timing_request::resolved}) {
    auto throwing = std::make_shared<throws_everywhere>(request);
    {
      launch_observation watching{throwing};
      for (int i = 0; i < launches; ++i) {
        EXPECT_NO_THROW(client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8}));
      }
    }
    EXPECT_EQ(throwing->launched_count(), launches) << to_string(request);
    EXPECT_EQ(throwing->measured_count(), launches) << to_string(request);
  }
  EXPECT_EQ(client.read(values), std::vector<int>(8, 2 * launches)) << "a launch was lost";
  EXPECT_EQ(log->count_containing("observer broke"), 1u);
  // The next observation is told of every launch, as if nothing had happened.
  auto names = std::make_shared<testing::recording_observer>();
  {
    launch_observation watching{names};
    client.launch(fill{values.view(), 7}, cube_count{1}, cube_dim{8});
  }
  EXPECT_THAT(names->names(), ::testing::ElementsAre(std::string{type_name<fill>()}));
  EXPECT_EQ(client.read(values), std::vector<int>(8, 7));
}

// Row 5: reads, syncs, allocations, nested captures and replays inside a capture window are
// refused with a capture_error saying what to do, and the window goes on recording as before.
TYPED_TEST_P(backend_faults, MisuseInsideACaptureWindowIsRefusedAndTheWindowGoesOnRecording) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  auto other = client.template empty<int>(8);
  graph earlier =
      client.capture([&] { client.launch(fill{other.view(), 4}, cube_count{1}, cube_dim{8}); });
  client.begin_capture();
  client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
  expect_refused_in_capture([&] { (void)client.read(values); }, "end_capture", "a read");
  expect_refused_in_capture([&] { client.sync(); }, "end_capture", "a sync");
  expect_refused_in_capture([&] { (void)client.template empty<int>(4); }, "end_capture",
                            "creating a buffer");
  expect_refused_in_capture([&] { client.begin_capture(); }, "already recording a capture",
                            "a nested begin_capture");
  expect_refused_in_capture(
      [&] { (void)client.capture([] { ADD_FAILURE() << "a nested capture ran its function"; }); },
      "already recording a capture", "a nested capture");
  expect_refused_in_capture([&] { earlier.replay(); }, "after that capture ends", "a replay");
  EXPECT_TRUE(client.capturing()) << "a refusal closed the window";
  client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
  graph recorded = client.end_capture();
  EXPECT_FALSE(client.capturing());
  EXPECT_EQ(recorded.size(), 2u) << "the window lost a launch around the refusals";
  EXPECT_EQ(client.read(values), std::vector<int>(8, 0));
  recorded.replay();
  EXPECT_EQ(client.read(values), std::vector<int>(8, 2));
  EXPECT_EQ(client.read(other), std::vector<int>(8, 0)) << "the refused replay ran";
}

// Row 8: measurements kept unread by a thread that has since exited (its stream gone with it)
// are still read, each no shorter than its kernel.
TYPED_TEST_P(backend_faults, AThreadThatExitsWithItsMeasurementsUnreadLeavesThemResolvable) {
  launchwatch::client& client = this->client();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client.template empty<int>(1);
  {
    launch_observation watching{keeps};
    std::thread{[&] {
      for (int i = 0; i < 3; ++i) {
        client.launch(spin{2'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
      }
    }}.join();
  }
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 3u);
  for (auto& [kernel, profile] : kept) {
    const auto ticks =
        within_30s("reading a measurement of a thread that has exited",
                   [p = std::move(profile)]() mutable { return std::move(p).resolve(); });
    ASSERT_TRUE(ticks.has_value()) << kernel;
    EXPECT_GE(ticks->length(), 2ms) << kernel;
  }
  EXPECT_EQ(client.read(done), std::vector<int>{1});
}

// Row 8: a thread that exits with its capture window open leaves its launches in the pass, marked
// captured and untimed, and no measurement for the pass to wait on.
TYPED_TEST_P(backend_faults, AThreadThatExitsMidCaptureLeavesItsLaunchesInThePassAndNothingToWaitFor) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  auto attributing = std::make_shared<attribution>();
  {
    launch_observation watching{attributing};
    std::thread{[&] {
      client.begin_capture();
      client.launch(fill{values.view(), 5}, cube_count{1}, cube_dim{8});
    }}.join();
    client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
  }
  const pass_record pass = within_30s("collecting a pass whose capturing thread exited",
                                      [&] { return attributing->collect(); });
  ASSERT_EQ(pass.launches.size(), 2u);
  std::size_t captured = 0;
  for (const auto& launch : pass.launches) {
    if (!launch.captured) continue;
    ++captured;
    EXPECT_EQ(pass.kernels.at(launch.kernel), type_name<fill>());
    EXPECT_FALSE(launch.timing.has_value());
  }
  EXPECT_EQ(captured, 1u);
  EXPECT_EQ(client.read(values), std::vector<int>(8, 1)) << "the abandoned window's launch ran";
}

REGISTER_TYPED_TEST_SUITE_P(backend_faults,
    AKernelFailureLeavesEveryLaunchAttributedBeforeItInThePass,
    AKernelFailureLeavesEveryLaunchInTheProfilingLog,
    AnObserverThatThrowsFromEveryMethodIsContainedLoggedOnceAndLaunchesGoOn,
    MisuseInsideACaptureWindowIsRefusedAndTheWindowGoesOnRecording,
    AThreadThatExitsWithItsMeasurementsUnreadLeavesThemResolvable,
    AThreadThatExitsMidCaptureLeavesItsLaunchesInThePassAndNothingToWaitFor);

}  // namespace launchwatch::conformance
