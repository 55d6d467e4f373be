// The launch stress of issue 14, written once for every backend: 16 threads launch timed kernels
// while observations churn; every launch must reach exactly one observer, and no duration an
// observer that did not see its launch. Included by launch_stress_test.cpp (CPU) and
// tests/cuda/cuda_launch_stress_test.cu (CUDA, compiled by nvcc so the kernel runs on the GPU).
#pragma once

#include <launchwatch/launchwatch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/sanitizers.hpp"

namespace launchwatch::stress {

inline constexpr std::int64_t default_launches =
    launchwatch::testing::under_thread_sanitizer ? 2'000 : 20'000;

inline std::int64_t launches_per_thread() {
  const char* set = std::getenv("LAUNCHWATCH_STRESS_LAUNCHES");
  return set != nullptr && *set != '\0' ? std::atoll(set) : default_launches;
}

struct touch {
  device_span<int> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    if (u.absolute_pos() < out.size()) out[u.absolute_pos()] += 1;
  }
};

/// Counts what it is told, per thread of the launches it saw, so a duration it gets for a launch it
/// never saw shows as more durations than launches on that thread. Durations are dropped unread.
class counting_keeper final : public launch_observer {
 public:
  static constexpr int threads = 16;

  void launched(std::string_view) override {}
  void launched_with(const launch_info&) override {
    launched_[this_thread()].fetch_add(1, std::memory_order_relaxed);
  }
  timing_request timing() const override { return timing_request::deferred; }
  void profiled(std::string_view, profile_duration) override {
    profiled_[this_thread()].fetch_add(1, std::memory_order_relaxed);
  }

  std::int64_t launched(int thread) const { return launched_[thread].load(); }
  std::int64_t profiled(int thread) const { return profiled_[thread].load(); }

  /// Which of the launching threads this is (set by each before it launches).
  static inline thread_local int index = 0;

 private:
  static int this_thread() { return index; }
  std::atomic<std::int64_t> launched_[threads]{};
  std::atomic<std::int64_t> profiled_[threads]{};
};

/// The stress itself: `counting_keeper::threads` threads each call `launch_all(thread, per_thread)`,
/// which makes `per_thread` timed launches (and waits for them), while observations churn; gtest
/// assertions. Each thread has its counting_keeper::index set before it starts.
template <class LaunchAll>
void churn_while(std::int64_t per_thread, LaunchAll launch_all) {
  std::vector<std::shared_ptr<counting_keeper>> observers;
  std::vector<std::unique_ptr<launch_observation>> installed;
  observers.push_back(std::make_shared<counting_keeper>());
  installed.push_back(std::make_unique<launch_observation>(observers.back()));

  std::atomic<int> running{counting_keeper::threads};
  std::vector<std::thread> launching;
  for (int t = 0; t < counting_keeper::threads; ++t) {
    launching.emplace_back([&, t] {
      counting_keeper::index = t;
      launch_all(t, per_thread);
      running.fetch_sub(1);
    });
  }
  // Churn: the next observation goes in before the last one comes out, so one is always installed.
  std::size_t swaps = 0;
  while (running.load() > 0) {
    observers.push_back(std::make_shared<counting_keeper>());
    installed.push_back(std::make_unique<launch_observation>(observers.back()));
    installed.erase(installed.begin());  // dropped out of order: the older one, below the top
    ++swaps;
    std::this_thread::sleep_for(std::chrono::microseconds{200});
  }
  for (auto& t : launching) t.join();
  installed.clear();

  std::int64_t reached = 0;
  for (int t = 0; t < counting_keeper::threads; ++t) {
    std::int64_t on_thread = 0;
    for (const auto& o : observers) {
      EXPECT_LE(o->profiled(t), o->launched(t))
          << "an observer was handed a duration of a launch it did not see (thread " << t << ")";
      on_thread += o->launched(t);
    }
    EXPECT_EQ(on_thread, per_thread) << "thread " << t << ": launches lost or reported twice";
    reached += on_thread;
  }
  EXPECT_EQ(reached, per_thread * counting_keeper::threads);
  EXPECT_GT(swaps, 1u) << "no churn happened while the threads launched";
  std::cout << counting_keeper::threads << " threads x " << per_thread << " launches, " << swaps
            << " observations installed and dropped meanwhile\n";
}

/// The stress on `client`'s device: each thread launches `touch` on a stream of its own.
inline void churn_while_launching(launchwatch::client client, std::int64_t per_thread) {
  churn_while(per_thread, [&client](int, std::int64_t launches) {
    auto out = client.empty<int>(64);
    for (std::int64_t i = 0; i < launches; ++i) {
      client.launch(touch{out.view()}, cube_count{1}, cube_dim{64});
    }
    client.sync();
  });
}


}  // namespace launchwatch::stress
