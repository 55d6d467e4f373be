// The CPU backend's own behaviours, checked deterministically with kernels that wait on a host gate
// (something only the CPU backend can run).

#include <launchwatch/config.hpp>
#include <launchwatch/logger.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/runtime/client.hpp>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "conformance/conformance_kernels.hpp"
#include "support/recording_observer.hpp"
#include "support/thread_names.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using conformance::fill;
using ::testing::HasSubstr;

/// A host flag a kernel waits on, so a test decides when that kernel ends.
struct gate {
  std::atomic<bool> open{false};
  std::atomic<bool> entered{false};
  void release() { open.store(true, std::memory_order_release); }
  void wait_until_entered() const {
    while (!entered.load(std::memory_order_acquire)) std::this_thread::yield();
  }
};

/// Waits at `the_gate`, then writes 1 to `out[0]`.
struct gated {
  gate* the_gate;
  device_span<int> out;
  void operator()(unit) const {
    the_gate->entered.store(true, std::memory_order_release);
    while (!the_gate->open.load(std::memory_order_acquire)) std::this_thread::yield();
    if (!out.empty()) out[0] = 1;
  }
};

/// Notes which threads its cubes ran on, each cube taking a while so the pool spreads them.
struct note_threads {
  std::mutex* mutex;
  std::set<std::thread::id>* threads;
  void operator()(unit u) const {
    if (u.unit_pos.x != 0) return;
    std::this_thread::sleep_for(2ms);
    std::lock_guard lock{*mutex};
    threads->insert(std::this_thread::get_id());
  }
};

struct throws_a_number {
  void operator()(unit) const { throw 42; }
};

struct throws_at_first_unit {
  device_span<int> out;
  void operator()(unit u) const {
    if (u.absolute_pos() == 0) throw std::runtime_error{"no"};
  }
};

TEST(CpuBackend, SpreadsALaunchsCubesOverSeveralThreads) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread";
  auto client = client::cpu();
  std::mutex mutex;
  std::set<std::thread::id> threads;
  client.launch(note_threads{&mutex, &threads}, cube_count{32}, cube_dim{256});
  client.sync();
  EXPECT_GT(threads.size(), 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u) << "a cube ran on the issuing thread";
}

TEST(CpuBackend, ItsStreamWorkerAndPoolThreadsAreNamedForTheToolsThatWatchTheProcess) {
  if (testing::thread_names().empty()) GTEST_SKIP() << "no /proc/self/task here";
  auto client = client::cpu();
  std::mutex mutex;
  std::set<std::thread::id> threads;
  client.launch(note_threads{&mutex, &threads}, cube_count{32}, cube_dim{256});
  client.sync();
  EXPECT_TRUE(testing::thread_named_within("lw-cpu-stream"));
  EXPECT_TRUE(testing::thread_named_within("lw-cpu-pool"));
}

/// Launches a gated kernel and opens the gate only once `launch` has returned: a launch that
/// waited for its kernel would never get here (the test then fails by its timeout).
void launch_returns_while_its_kernel_is_held(const client& on) {
  gate g;
  auto out = on.empty<int>(1);
  on.launch(gated{&g, out.view()}, cube_count{1}, cube_dim{1});
  g.wait_until_entered();
  g.release();
  EXPECT_EQ(on.read(out), std::vector<int>{1});
}

TEST(CpuBackend, ALaunchReturnsBeforeItsKernelRuns) {
  launch_returns_while_its_kernel_is_held(client::cpu());
}

TEST(CpuBackend, AReadWaitsOnlyForTheLaunchesThatReferencedItsBuffer) {
  auto held = client::cpu().pinned();
  auto free = client::cpu().pinned();
  gate g;
  auto held_out = held.empty<int>(1);
  auto values = free.empty<int>(4);
  held.launch(gated{&g, held_out.view()}, cube_count{1}, cube_dim{1});
  free.launch(fill{values.view(), 3}, cube_count{1}, cube_dim{4});
  EXPECT_EQ(free.read(values), std::vector<int>(4, 3));  // Would hang were it waiting for the gate.
  EXPECT_FALSE(g.open.load());
  g.release();
  EXPECT_EQ(held.read(held_out), std::vector<int>{1});
}

TEST(CpuBackend, DeferredTimingWaitsOnNothingAndTheWorkerStampsTheKernelsWindow) {
  auto client = client::cpu();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  gate g;
  auto out = client.empty<int>(1);
  {
    launch_observation watching{keeps};
    client.launch(gated{&g, out.view()}, cube_count{1}, cube_dim{1});
  }
  g.wait_until_entered();
  auto kept = keeps->take_profiles();  // Handed over while the kernel is still held.
  ASSERT_EQ(kept.size(), 1u);
  std::this_thread::sleep_for(5ms);
  const auto released_at = std::chrono::steady_clock::now();
  g.release();
  const auto ticks = std::move(kept[0].profile).resolve();
  ASSERT_TRUE(ticks.has_value());
  EXPECT_LE(ticks->start(), released_at);
  EXPECT_GE(ticks->end(), released_at);
  EXPECT_GE(ticks->length(), 5ms);
}

TEST(CpuBackend, ReadingOneMeasurementWaitsForThatKernelOnly) {
  auto client = client::cpu();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  gate g;
  auto values = client.empty<int>(4);
  auto out = client.empty<int>(1);
  {
    launch_observation watching{keeps};
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{4});
    client.launch(gated{&g, out.view()}, cube_count{1}, cube_dim{1});
  }
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 2u);
  // Resolves although the next kernel on the same stream is held at its gate.
  EXPECT_TRUE(std::move(kept[0].profile).resolve().has_value());
  EXPECT_FALSE(g.open.load());
  g.release();
  EXPECT_TRUE(std::move(kept[1].profile).resolve().has_value());
}

TEST(CpuBackend, TheLaunchesQueuedAfterAFailedOneStillRun) {
  auto client = client::cpu();
  auto out = client.empty<int>(4);
  client.launch(throws_at_first_unit{out.view()}, cube_count{1}, cube_dim{4});
  client.launch(fill{out.view(), 5}, cube_count{1}, cube_dim{4});
  EXPECT_THROW(client.sync(), kernel_failure);
  EXPECT_EQ(client.read(out), std::vector<int>(4, 5));
}

TEST(CpuBackend, AKernelThrowingSomethingNotAnExceptionIsStillAFailureNamingIt) {
  auto client = client::cpu();
  client.launch(throws_a_number{}, cube_count{1}, cube_dim{1});
  try {
    client.sync();
    FAIL() << "the failure went unreported";
  } catch (const kernel_failure& failure) {
    EXPECT_THAT(failure.what(), HasSubstr("throws_a_number"));
    EXPECT_THAT(failure.what(), HasSubstr("not derived from std::exception"));
  }
}

TEST(CpuBackend, AFailureInACubeSpreadOverThePoolIsReported) {
  auto client = client::cpu();
  auto out = client.empty<int>(1 << 16);
  client.launch(throws_at_first_unit{out.view()}, cube_count{64}, cube_dim{1024});
  EXPECT_THROW(client.sync(), kernel_failure);
}

TEST(CpuBackend, AThreadThatExitsLeavesItsLaunchesToFinish) {
  auto client = client::cpu();
  auto values = client.empty<int>(1 << 16);
  std::thread{[&] {
    client.launch(fill{values.view(), 2}, cube_count{64}, cube_dim{1024});
  }}.join();
  EXPECT_EQ(client.read(values), std::vector<int>(1 << 16, 2));
}

TEST(CpuBackend, AReplayCanBeIssuedFromAnotherThread) {
  auto client = client::cpu();
  auto values = client.empty<int>(4);
  auto recorded = client.capture([&] {
    client.launch(fill{values.view(), 9}, cube_count{1}, cube_dim{4});
  });
  std::thread{[&] { recorded.replay(); }}.join();
  EXPECT_EQ(client.read(values), std::vector<int>(4, 9));
}

TEST(CpuBackend, AReplayOnAStreamThatIsCapturingIsRefused) {
  auto client = client::cpu();
  auto values = client.empty<int>(4);
  auto recorded = client.capture([&] {
    client.launch(fill{values.view(), 9}, cube_count{1}, cube_dim{4});
  });
  client.begin_capture();
  EXPECT_THROW(recorded.replay(), capture_error);
  (void)client.end_capture();
}

// Fault table row 6 on the CPU backend: a buffer larger than the process can address is a device_error
// with its size, as on CUDA, and the device goes on working.
TEST(CpuBackend, AnAllocationFailureSaysOutOfMemoryWithTheSizeAndTheDeviceGoesOn) {
  auto client = client::cpu();
  // 1 PiB: more than x86-64's user address space, so no overcommit setting lets it through.
  constexpr std::size_t too_many = std::size_t{1} << 50;
  try {
    (void)client.empty<std::byte>(too_many);
    FAIL() << "a buffer of 1 PiB was allocated";
  } catch (const device_error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("out of memory"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr(std::to_string(too_many) + " bytes"));
  }
  auto values = client.empty<int>(64);
  client.launch(fill{values.view(), 2}, cube_count{1}, cube_dim{64});
  EXPECT_EQ(client.read(values), std::vector<int>(64, 2));
}

TEST(CpuClient, TheSameIndexIsTheSameDeviceAndAnotherIndexAnother) {
  EXPECT_EQ(client::cpu(0), client::cpu());
  EXPECT_FALSE(client::cpu(0) == client::cpu(1));
  EXPECT_EQ(client::cpu(1).device_index(), 1);
  EXPECT_EQ(client::cpu().backend(), "cpu");
  EXPECT_THAT(client::cpu().device_name(), HasSubstr("cpu:0"));
}

TEST(CpuClient, RejectsANegativeDeviceIndex) {
  EXPECT_THROW((void)client::cpu(-1), std::invalid_argument);
}

TEST(CpuBackend, WithTheLoggerOnAndNothingObservingALaunchDoesNotWaitForItsKernel) {
  // The logger reads measurements on its writer thread; only an observer that also wants the
  // reading makes the launch path read it (behaviour 7).
  detail::reset_profiling_logger_for_testing();
  std::ostringstream log;
  auto& logger = profiling_logger::instance();
  logger.set_output(log_output::stream(log));
  logger.set_level(profile_level::medium);
  {
    auto client = client::cpu();
    launch_returns_while_its_kernel_is_held(client);
    client.sync();
  }
  logger.flush();
  EXPECT_THAT(log.str(), HasSubstr("gated"));
  detail::reset_profiling_logger_for_testing();
}

TEST(CpuClient, ABadProfileLevelInTheEnvironmentFailsTheFirstClientNamingTheVariable) {
  detail::reset_profiling_logger_for_testing();
  ::setenv("LAUNCHWATCH_PROFILE", "loud", 1);
  try {
    (void)client::cpu();
    FAIL() << "a bad LAUNCHWATCH_PROFILE was ignored";
  } catch (const configuration_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("LAUNCHWATCH_PROFILE"));
  }
  ::unsetenv("LAUNCHWATCH_PROFILE");
  detail::reset_profiling_logger_for_testing();
  EXPECT_NO_THROW((void)client::cpu());
}

TEST(CpuClient, AnUnwritableLogFileFailsTheFirstClientNamingIt) {
  detail::reset_profiling_logger_for_testing();
  ::setenv("LAUNCHWATCH_PROFILE", "basic", 1);
  ::setenv("LAUNCHWATCH_LOG", "/nonexistent-launchwatch-dir/profile.log", 1);
  try {
    (void)client::cpu();
    FAIL() << "an unwritable LAUNCHWATCH_LOG was ignored";
  } catch (const configuration_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("/nonexistent-launchwatch-dir/profile.log"));
  }
  ::unsetenv("LAUNCHWATCH_PROFILE");
  ::unsetenv("LAUNCHWATCH_LOG");
  detail::reset_profiling_logger_for_testing();
}

/// An observer that launches from inside `launched`: forbidden (behaviour 13).
class launches_from_callback : public launch_observer {
 public:
  explicit launches_from_callback(client c) : client_{std::move(c)} {}
  void launched(std::string_view) override {
    client_.launch(fill{device_span<int>{}, 0}, cube_count{1}, cube_dim{1});
  }

 private:
  client client_;
};

TEST(CpuBackendDeathTest, AnObserverThatLaunchesFromACallbackFailsLoudly) {
#if LAUNCHWATCH_CHECK_REENTRY
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto client = client::cpu();
        launch_observation watching{std::make_shared<launches_from_callback>(client)};
        client.launch(fill{device_span<int>{}, 0}, cube_count{1}, cube_dim{1});
      },
      "launch a kernel");
#else
  GTEST_SKIP() << "built without LAUNCHWATCH_CHECK_REENTRY";
#endif
}

}  // namespace
}  // namespace launchwatch
