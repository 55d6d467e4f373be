// Several threads launching while observations come and go: every launch reaches exactly one
// observer, and none reaches an observation that has ended. Run under the TSan preset too.

#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/measurements.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;

using testing::recording_observer;

/// An observer whose observation has ended, with how many launches it had been told of by then:
/// any it was told of later reached an ended observation.
struct ended {
  std::shared_ptr<recording_observer> observer;
  std::size_t launches_when_ended = 0;
};

// Kernel names must outlive the launches: one static table of them.
const std::vector<std::string>& kernel_names(int threads, int per_thread) {
  static const auto names = [&] {
    std::vector<std::string> all;
    for (int t = 0; t < threads; ++t)
      for (int i = 0; i < per_thread; ++i) all.push_back(std::to_string(t) + ":" + std::to_string(i));
    return all;
  }();
  return names;
}

TEST(LaunchObservationStress, EveryLaunchReachesExactlyOneObserverAndNoneAnEndedOne) {
  constexpr int launcher_count = 4;
  constexpr int launches_per_thread = 20000;
  const auto& names = kernel_names(launcher_count, launches_per_thread);

  auto base = std::make_shared<recording_observer>();
  launch_observation base_watch{base};  // so every launch has an observer to reach

  std::atomic<int> launchers_done{0};
  // The launchers start once the swapper is churning, so the race is run even on a loaded machine
  // where 80k launches could otherwise finish before the swapper is first scheduled.
  std::atomic<bool> churning{false};
  std::vector<ended> swapped;
  std::thread swapper{[&] {
    // Nested and out-of-order installs and drops while the launchers run.
    while (launchers_done.load() < launcher_count) {
      ended a{std::make_shared<recording_observer>()};
      ended b{std::make_shared<recording_observer>()};
      auto watch_a = std::make_unique<launch_observation>(a.observer);
      auto watch_b = std::make_unique<launch_observation>(b.observer);
      std::this_thread::yield();
      const auto end = [](std::unique_ptr<launch_observation>& watch, ended& observer) {
        watch.reset();
        observer.launches_when_ended = observer.observer->launches().size();
      };
      if (swapped.size() % 2 == 0) {
        end(watch_b, b);
        end(watch_a, a);
      } else {
        end(watch_a, a);
        end(watch_b, b);
      }
      swapped.push_back(std::move(a));
      swapped.push_back(std::move(b));
      churning.store(true);
    }
  }};

  std::vector<std::thread> launchers;
  for (int t = 0; t < launcher_count; ++t) {
    launchers.emplace_back([&, t] {
      while (!churning.load()) std::this_thread::yield();
      for (int i = 0; i < launches_per_thread; ++i) {
        launch_path::notify_launch(names[static_cast<std::size_t>(t * launches_per_thread + i)]);
      }
      ++launchers_done;
    });
  }
  for (auto& launcher : launchers) launcher.join();
  swapper.join();

  std::vector<int> seen(names.size(), 0);
  auto count = [&](const recording_observer& observer) {
    for (const auto& name : observer.names()) {
      const auto colon = name.find(':');
      const auto index = std::stoi(name.substr(0, colon)) * launches_per_thread +
                         std::stoi(name.substr(colon + 1));
      ++seen[static_cast<std::size_t>(index)];
    }
  };
  count(*base);
  for (const auto& [observer, launches_when_ended] : swapped) {
    count(*observer);
    EXPECT_EQ(observer->launches().size(), launches_when_ended)
        << "an observer was called after its observation ended";
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    ASSERT_EQ(seen[i], 1) << "launch " << names[i] << " reached " << seen[i] << " observers";
  }
  EXPECT_GT(swapped.size(), 0u);
}

TEST(LaunchObservationStress, ResolvedTimingsFromManyThreadsReachTheInstalledObserver) {
  constexpr int launcher_count = 4;
  constexpr int launches_per_thread = 2000;
  auto observer = std::make_shared<recording_observer>(timing_request::resolved);
  launch_observation watching{observer};
  std::vector<std::thread> launchers;
  for (int t = 0; t < launcher_count; ++t) {
    launchers.emplace_back([] {
      for (int i = 0; i < launches_per_thread; ++i) {
        launch_path::notify_launch("k");
        if (launch_path::timing_wanted()) launch_path::notify_profiled("k", testing::measured(1us));
      }
    });
  }
  for (auto& launcher : launchers) launcher.join();
  EXPECT_EQ(observer->timings().size(), std::size_t{launcher_count * launches_per_thread});
}

}  // namespace
}  // namespace launchwatch
