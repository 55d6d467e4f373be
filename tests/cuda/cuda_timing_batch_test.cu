// Review-2026-12-01b finding 4 on the GPU: a read on another thread, made while a launch holds a
// slot of its stream's timing batch but has not submitted its kernel, must neither lose that
// launch's measurement nor let its kernel stamp a slot that the next batch owns. Through the
// timing collector directly (the review's test), then end to end (10^5 deferred 2 µs kernels with
// the logger reading every measurement on its writer thread). Skips where no GPU is visible.

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <launchwatch/detail/cuda_entry.hpp>
#include <launchwatch/launchwatch.hpp>
#include <launchwatch/logger.hpp>

#include "backend/cuda/device_health.hpp"
#include "backend/cuda/timing_slots.hpp"
#include "conformance/conformance_kernels.hpp"
#include "cuda/cuda_backend.hpp"
#include "support/profiling_log.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using detail::cuda::device_window;
using detail::cuda::timing_batch;
using detail::cuda::timing_collector;

/// Spins for `cycles` SM cycles.
struct spin_cycles {
  long long cycles;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit) const {
#if defined(__CUDA_ARCH__)
    const long long began = clock64();
    while (clock64() - began < cycles) {
    }
#endif
  }
};

class CudaTimingBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = conformance::cuda_backend::unavailable()) GTEST_SKIP() << *why;
    int khz = 0;
    ASSERT_EQ(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0), cudaSuccess);
    cycles_per_us_ = khz / 1000;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) {
      (void)cudaStreamSynchronize(stream_);
      (void)cudaStreamDestroy(stream_);
    }
  }

  /// Launches a `us` µs spin stamped into `lease`'s slot, and says so to the collector, as
  /// cuda_stream does.
  void launch(timing_collector& collector, const timing_collector::lease& lease, long long us) {
    detail::cuda_entry<spin_cycles><<<1, 32, 0, stream_>>>(spin_cycles{us * cycles_per_us_},
                                                          lease.target);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    collector.launched(*lease.record);
    if (lease.filled) collector.close(lease.filled);
  }

  long long cycles_per_us_ = 1000;
  cudaStream_t stream_ = nullptr;
};

TEST_F(CudaTimingBatch, AReadOnAnotherThreadBetweenASlotAndItsKernelLosesNoMeasurement) {
  auto health = std::make_shared<detail::cuda::device_health>(0);
  // One block: the next batch reuses this one's.
  timing_collector collector{0, health, timing_collector::block_slots};
  std::shared_ptr<timing_batch> open;
  const auto l0 = collector.acquire(open, stream_, std::chrono::steady_clock::now());
  ASSERT_TRUE(l0.has_value());
  launch(collector, *l0, 100);
  // L1 takes its slot; its kernel is not submitted yet when the read of L0 comes.
  const auto l1 = collector.acquire(open, stream_, std::chrono::steady_clock::now());
  ASSERT_TRUE(l1.has_value());
  std::optional<device_window> w0;
  std::thread reader{[&] { w0 = collector.wait(*l0->record, "l0"); }};
  std::this_thread::sleep_for(50ms);  // the read is made, and L0's kernel has long ended
  launch(collector, *l1, 100);
  reader.join();
  ASSERT_TRUE(w0.has_value());
  const auto w1 = collector.wait(*l1->record, "l1");
  ASSERT_TRUE(w1.has_value()) << "the launch between its slot and its kernel lost its measurement";
  EXPECT_GE(w1->end - w1->start, 90'000u);
  EXPECT_GE(w1->start, w0->end);
  // The next batch's first two launches, 2 µs each: neither slot holds an older kernel's stamps.
  open.reset();
  const auto l2 = collector.acquire(open, stream_, std::chrono::steady_clock::now());
  const auto l3 = collector.acquire(open, stream_, std::chrono::steady_clock::now());
  ASSERT_TRUE(l2.has_value() && l3.has_value());
  launch(collector, *l2, 2);
  launch(collector, *l3, 2);
  for (const auto* lease : {&*l2, &*l3}) {
    const auto window = collector.wait(*lease->record, "next");
    ASSERT_TRUE(window.has_value());
    EXPECT_GE(window->start, w1->end) << "a slot of the next batch held an older kernel's stamps";
    EXPECT_LT(window->end - window->start, 50'000u);
  }
  for (const auto* lease : {&*l0, &*l1, &*l2, &*l3}) collector.let_go(lease->record);
  open.reset();
}

/// A duration from a logger line's "took 2.048 us", in nanoseconds, or nothing.
std::optional<double> took_ns(const std::string& line) {
  const auto at = line.find(" took ");
  if (at == std::string::npos) return std::nullopt;
  std::istringstream in{line.substr(at + 6)};
  double value = 0;
  std::string unit;
  if (!(in >> value >> unit)) return std::nullopt;
  if (unit == "ns") return value;
  if (unit == "us") return value * 1e3;
  if (unit == "ms") return value * 1e6;
  if (unit == "s") return value * 1e9;
  return std::nullopt;
}

TEST_F(CudaTimingBatch, AHundredThousandDeferredLaunchesReadByTheLoggerLoseNoneAndStretchNone) {
  auto client = client::cuda();
  // A line per launch with its duration; the writer thread reads each measurement while this
  // thread keeps launching (the review's case, at `basic` the same reads without the lines).
  testing::profiling_log log{profile_level::medium};
  constexpr int launches = 100'000;
  const long long two_us = 2 * cycles_per_us_;
  for (int i = 0; i < launches; ++i) {
    client.launch(spin_cycles{two_us}, cube_count{1}, cube_dim{32});
  }
  client.sync();
  std::istringstream lines{log.text()};
  std::vector<double> durations;
  int untimed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("spin_cycles") == std::string::npos) continue;
    if (const auto ns = took_ns(line)) {
      durations.push_back(*ns);
    } else if (line.find("untimed") != std::string::npos) {
      ++untimed;
    }
  }
  EXPECT_EQ(untimed, 0) << "launches whose window carried no measurement";
  ASSERT_EQ(durations.size(), static_cast<std::size_t>(launches));
  std::vector<double> sorted = durations;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const auto stretched = std::count_if(durations.begin(), durations.end(),
                                       [&](double ns) { return ns > 10 * median; });
  EXPECT_EQ(stretched, 0) << "durations over 10x the median (" << median << " ns)";
}

}  // namespace
}  // namespace launchwatch
