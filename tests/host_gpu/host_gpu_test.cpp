// The GPU backend's shared code (src/backend/gpu: device, stream, deferred timing, clock) over the
// runtime emulated on the host (host_gpu_runtime.hpp): what the CUDA and HIP backends do around the
// API's calls, checked in every build, under the sanitizers too, without a GPU.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/launchwatch.hpp>

#include "conformance/conformance_kernels.hpp"
#include "host_gpu_runtime.hpp"
#include "support/capturing_sink.hpp"
#include "support/recording_observer.hpp"
#include "support/thread_names.hpp"

namespace launchwatch {
namespace {

using conformance::fill;
using namespace std::chrono_literals;
namespace host_gpu = testing::host_gpu;

TEST(HostGpu, RunsALaunchThroughTheSharedGpuStreamAndReadsItsResult) {
  auto client = host_gpu::open_client();
  EXPECT_EQ(client.backend(), "host_gpu");
  auto values = client.empty<int>(64);
  client.launch(fill{values.view(), 7}, cube_count{2}, cube_dim{32});
  EXPECT_EQ(client.read(values), std::vector<int>(64, 7));
}

TEST(HostGpu, ADeferredMeasurementIsTheDevicesWindowInsideItsLaunchAndSync) {
  auto client = host_gpu::open_client();
  auto values = client.empty<int>(1024);
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  const auto before = std::chrono::steady_clock::now();
  {
    launch_observation watching{keeps};
    client.launch(fill{values.view(), 3}, cube_count{4}, cube_dim{256});
  }
  client.sync();
  const auto after = std::chrono::steady_clock::now();
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].profile.method(), timing_method::device);
  const auto ticks = std::move(kept[0].profile).resolve();
  ASSERT_TRUE(ticks.has_value());
  EXPECT_GE(ticks->start(), before);
  // The emulated device's timer is the steady clock: mapped back through the clock's anchors, a
  // window ends by the sync, give or take an anchor's uncertainty (an exchange's half round trip,
  // inside its probe's life: long on a loaded machine, whose threads wait their turn).
  EXPECT_LE(ticks->end(),
            after + std::max<std::chrono::nanoseconds>(1ms, host_gpu::longest_clock_probe()))
      << "the longest clock probe took " << host_gpu::longest_clock_probe().count() << " ns";
  EXPECT_GE(ticks->length(), 0ns);
}

TEST(HostGpu, ItsTimingCollectorAndClockKeeperThreadsAreNamedForTheToolsThatWatchTheProcess) {
  if (testing::thread_names().empty()) GTEST_SKIP() << "no /proc/self/task here";
  auto client = host_gpu::open_client();
  auto values = client.empty<int>(64);
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  {
    launch_observation watching{keeps};
    client.launch(fill{values.view(), 3}, cube_count{1}, cube_dim{64});
  }
  client.sync();
  ASSERT_EQ(keeps->take_profiles().size(), 1u);
  EXPECT_TRUE(testing::thread_named_within("lw-timing"));
  EXPECT_TRUE(testing::thread_named_within("lw-clock"));
}

TEST(HostGpu, DeferredLaunchesOverManyBatchesAreEachMeasuredInIssueOrder) {
  auto client = host_gpu::open_client();
  auto values = client.empty<int>(256);
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  constexpr int launches = 1000;  // about four batches of 256
  {
    launch_observation watching{keeps};
    for (int i = 0; i < launches; ++i) {
      client.launch(fill{values.view(), i}, cube_count{1}, cube_dim{256});
    }
  }
  const auto resolved = keeps->resolve_profiles();
  ASSERT_EQ(resolved.size(), static_cast<std::size_t>(launches));
  for (std::size_t i = 0; i < resolved.size(); ++i) {
    ASSERT_TRUE(resolved[i].second.has_value()) << "launch " << i << " has no window";
    if (i > 0) {
      EXPECT_GE(resolved[i].second->start(), resolved[i - 1].second->end())
          << "launch " << i << " starts before launch " << i - 1 << " ended";
    }
  }
  EXPECT_EQ(client.read(values), std::vector<int>(256, launches - 1));
}

/// A deferred observer that hands each measurement to a reader thread as it arrives, so reads
/// close batches while the launching thread fills them (review-2026-12-01b finding 4).
class handing_over : public launch_observer {
 public:
  void launched(std::string_view) override {}
  timing_request timing() const override { return timing_request::deferred; }
  void profiled(std::string_view, profile_duration profile) override {
    {
      std::lock_guard lock{mutex_};
      waiting_.push_back(std::move(profile));
    }
    arrived_.notify_one();
  }
  void timed(std::string_view, std::chrono::nanoseconds, timing_method) override {}

  /// Reads measurements as they arrive until finish() was called and every one handed over was
  /// read. Returns how many were read and how many of those had a window. A launch refused its
  /// measurement (every timing slot busy, on a loaded machine) hands over none, so the count read
  /// is what to compare with, not the launches.
  std::pair<int, int> read_all() {
    int read = 0;
    int windows = 0;
    for (;;) {
      std::unique_lock lock{mutex_};
      arrived_.wait(lock, [&] { return !waiting_.empty() || finished_; });
      if (waiting_.empty()) return {read, windows};
      profile_duration next = std::move(waiting_.front());
      waiting_.pop_front();
      lock.unlock();
      ++read;
      if (std::move(next).resolve().has_value()) ++windows;
    }
  }

  /// No more measurements come: read_all() returns once it has read the ones waiting.
  void finish() {
    {
      std::lock_guard lock{mutex_};
      finished_ = true;
    }
    arrived_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<profile_duration> waiting_;
  bool finished_ = false;
};

TEST(HostGpu, MeasurementsReadOnAnotherThreadWhileLaunchesGoOnAllHaveTheirWindows) {
  auto client = host_gpu::open_client();
  auto values = client.empty<int>(32);
  auto reader = std::make_shared<handing_over>();
  constexpr int launches = 5000;
  std::pair<int, int> read_and_windows;
  std::thread reading{[&] { read_and_windows = reader->read_all(); }};
  {
    launch_observation watching{reader};
    for (int i = 0; i < launches; ++i) {
      client.launch(fill{values.view(), i}, cube_count{1}, cube_dim{32});
    }
  }
  reader->finish();
  reading.join();
  const auto [read, windows] = read_and_windows;
  EXPECT_GT(read, 0) << "no measurement was handed over";
  EXPECT_EQ(windows, read) << "of " << launches << " launches, " << read
                           << " handed a measurement over";
}

TEST(HostGpu, ATimedLaunchInACaptureWindowIsRecordedUntimedAndTheRefusalSaysWhy) {
  auto client = host_gpu::open_client();
  auto values = client.empty<int>(32);
  testing::captured_log log;
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  const std::uint64_t run_before = host_gpu::kernels_run();
  graph captured = [&] {
    launch_observation watching{keeps};
    return client.capture(
        [&] { client.launch(fill{values.view(), 5}, cube_count{1}, cube_dim{32}); });
  }();
  EXPECT_EQ(host_gpu::kernels_run(), run_before) << "a captured launch is recorded, not run";
  EXPECT_TRUE(keeps->take_profiles().empty()) << "no measurement of a launch inside a capture";
  EXPECT_EQ(keeps->names().size(), 1u) << "the launch is still reported";
  EXPECT_GE(log->count_containing("capture"), 1u) << "the refusal is said";
  captured.replay();
  EXPECT_EQ(client.read(values), std::vector<int>(32, 5)) << "the replay ran the captured launch";
}

TEST(HostGpu, ALaunchCallFailingWithAStickyErrorIsADeviceErrorNamingTheKernelAndEndsTheDevice) {
  auto client = host_gpu::open_client();
  auto values = client.empty<int>(32);
  host_gpu::fail_next_launch(host_gpu::host_gpu_runtime::launch_failure);
  try {
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{32});
    client.sync();
    FAIL() << "the failed launch was not reported";
  } catch (const device_error& failure) {
    EXPECT_THAT(failure.what(), ::testing::HasSubstr("fill"));
    EXPECT_THAT(failure.what(), ::testing::HasSubstr("hostErrorLaunchFailure"));
  }
  EXPECT_THROW(client.launch(fill{values.view(), 2}, cube_count{1}, cube_dim{32}), device_error)
      << "a sticky fault ends the device, as on CUDA";
}

}  // namespace
}  // namespace launchwatch
