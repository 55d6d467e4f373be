// Several threads under scopes launching while passes are collected and other attributions come
// and go: every launch is attributed to its own thread's scope path, exactly once. Run under the
// TSan preset too (label `concurrency`).

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/launch_path.hpp>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "attribute/scope_paths.hpp"
#include "support/measurements.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;

constexpr int worker_count = 4;
constexpr int launches_per_worker = 3000;
constexpr std::array<std::string_view, worker_count> kernels{"k0", "k1", "k2", "k3"};
constexpr std::array<std::string_view, worker_count> scope_names{"t0", "t1", "t2", "t3"};

void work(int index) {
  const auto kernel = kernels[static_cast<std::size_t>(index)];
  for (int i = 0; i < launches_per_worker; ++i) {
    scope outer{"worker"};
    scope inner{scope_names[static_cast<std::size_t>(index)]};
    launch_info info;
    info.kernel = kernel;
    info.stream = static_cast<std::uint64_t>(index + 1);
    launch_path::notify_launch(info);
    // Where a runtime submits the kernel: a collect on another thread may fall in here.
    std::this_thread::yield();
    launch_path::notify_profiled(kernel, testing::measured_on_device(1us));
  }
}

/// Every pass collected while `worker_count` threads each made `launches_per_worker` launches (under
/// two scopes, each followed by its measurement) and one thread collected passes over and over,
/// while another made attributions come and go; then one last pass, once the workers were done.
std::vector<pass_record> passes_collected_under_load() {
  auto observer = std::make_shared<attribution>();
  std::mutex passes_mutex;
  std::vector<pass_record> passes;
  std::atomic<bool> done{false};
  {
    launch_observation watching{observer};
    std::thread collector{[&] {
      while (!done.load()) {
        auto pass = observer->collect();
        std::lock_guard lock{passes_mutex};
        passes.push_back(std::move(pass));
      }
    }};
    // Other attributions coming and going move where scope intervals go, under the workers' feet.
    std::thread churn{[&] {
      while (!done.load()) {
        attribution other;
        scope s{"churn"};
      }
    }};
    std::vector<std::thread> workers;
    for (int t = 0; t < worker_count; ++t) workers.emplace_back(work, t);
    for (auto& w : workers) w.join();
    done.store(true);
    collector.join();
    churn.join();
  }
  passes.push_back(observer->collect());
  return passes;
}

TEST(AttributionStress, EveryLaunchIsAttributedToItsOwnThreadWhilePassesAreCollected) {
  const auto passes = passes_collected_under_load();
  std::size_t launches = 0;
  std::array<std::size_t, worker_count> per_worker{};
  for (const auto& pass : passes) {
    for (const auto& launch : pass.launches) {
      ++launches;
      const auto& kernel = pass.kernels.at(launch.kernel);
      const auto index = static_cast<std::size_t>(kernel[1] - '0');
      ASSERT_LT(index, kernels.size()) << kernel;
      ++per_worker[index];
      ASSERT_TRUE(launch.scope.has_value()) << kernel;
      EXPECT_EQ(pass.scope_path_text(*launch.scope), "worker/" + std::string{scope_names[index]});
      EXPECT_EQ(pass.streams.at(launch.stream).stream, index + 1);
    }
  }
  EXPECT_EQ(launches, static_cast<std::size_t>(worker_count * launches_per_worker));
  for (const auto n : per_worker) EXPECT_EQ(n, static_cast<std::size_t>(launches_per_worker));
}

// A collect that falls between a launch and its measurement leaves that launch to the next pass,
// so no measurement is parted from its launch however the collects fall.
TEST(AttributionStress, EveryMeasurementReachesItsLaunchWhilePassesAreCollected) {
  const auto passes = passes_collected_under_load();
  std::size_t launches = 0;
  std::size_t timed = 0;
  lost_measurements lost;
  for (const auto& pass : passes) {
    lost.empty += pass.lost.empty;
    lost.failed += pass.lost.failed;
    lost.unpaired += pass.lost.unpaired;
    launches += pass.launches.size();
    for (const auto& launch : pass.launches) timed += launch.timing ? 1 : 0;
  }
  EXPECT_EQ(launches, static_cast<std::size_t>(worker_count * launches_per_worker));
  EXPECT_EQ(timed, launches);
  EXPECT_EQ(lost.unpaired, 0u);
  EXPECT_EQ(lost.empty + lost.failed, 0u);
}

TEST(AttributionStress, ScopesStayBalancedWhileAttributionsComeAndGo) {
  std::atomic<bool> done{false};
  std::thread churn{[&] {
    while (!done.load()) {
      attribution a;
      attribution b;
    }
  }};
  std::vector<std::thread> threads;
  std::atomic<int> unbalanced{0};
  for (int t = 0; t < worker_count; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        scope a{"a"};
        scope b{"b"};
      }
      if (detail::open_scope_depth() != 0) unbalanced.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  done.store(true);
  churn.join();
  EXPECT_EQ(unbalanced.load(), 0);
}

// Threads entering and leaving their first and last scopes over and over while scope-less threads
// launch under sole_scoped_thread: each such launch is outside, or under a path some scoped thread
// really had open, never a path torn or freed under it (TSan watches the published paths).
TEST(AttributionStress, UnscopedLaunchesGetAPathAScopedThreadHadOrNoneWhileThreadsEnterAndLeaveScopes) {
  attribution_options options;
  options.unscoped = unscoped_launches::sole_scoped_thread;
  auto observer = std::make_shared<attribution>(options);
  std::atomic<bool> done{false};
  constexpr int unscoped_launchers = 2;
  constexpr int launches_each = 3000;
  {
    launch_observation watching{observer};
    std::vector<std::thread> scoped;
    for (int t = 0; t < 2; ++t) {
      scoped.emplace_back([&, t] {
        while (!done.load()) {
          scope outer{"outer"};
          scope inner{scope_names[static_cast<std::size_t>(t)]};
          std::this_thread::yield();
        }
      });
    }
    std::vector<std::thread> launchers;
    for (int t = 0; t < unscoped_launchers; ++t) {
      launchers.emplace_back([] {
        for (int i = 0; i < launches_each; ++i) {
          launch_info info;
          info.kernel = "helper";
          launch_path::notify_launch(info);
        }
      });
    }
    for (auto& l : launchers) l.join();
    done.store(true);
    for (auto& s : scoped) s.join();
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.launches.size(), static_cast<std::size_t>(unscoped_launchers * launches_each));
  for (const auto& launch : pass.launches) {
    if (!launch.scope) continue;
    const auto path = pass.scope_path_text(*launch.scope);
    EXPECT_TRUE(path == "outer" || path == "outer/t0" || path == "outer/t1") << path;
  }
}

// Snapshots of an aggregate-only attribution with a trace prefix, taken over and over while 8
// threads launch (some caught between a launch and its measurement): each sees no more launches
// than were made and never fewer than the one before, and the collect that follows still has
// every launch, each in the prefix or counted as left out of it.
TEST(AttributionStress, SnapshotsWhileEightThreadsLaunchLoseNothingForTheCollectAfter) {
  constexpr int threads = 8;
  constexpr int launches_each = 5000;
  attribution_options options;
  options.aggregate_only = true;
  options.trace_prefix_events = 4 * 3000;
  auto observer = std::make_shared<attribution>(options);
  std::atomic<int> launched{0};
  std::atomic<bool> done{false};
  std::size_t snapshots = 0;
  bool grew_monotonically = true;
  bool never_ahead = true;
  {
    launch_observation watching{observer};
    std::thread snapshotter{[&] {
      std::size_t last = 0;
      while (!done.load()) {
        const auto summary = observer->snapshot_summary();
        // Read after the snapshot: every launch it counted had been reported before.
        const auto made = static_cast<std::size_t>(launched.load());
        never_ahead = never_ahead && summary.launches <= made;
        grew_monotonically = grew_monotonically && summary.launches >= last;
        last = summary.launches;
        ++snapshots;
      }
    }};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        const auto kernel = kernels[static_cast<std::size_t>(t % worker_count)];
        for (int i = 0; i < launches_each; ++i) {
          scope outer{"worker"};
          scope inner{scope_names[static_cast<std::size_t>(t % worker_count)]};
          launch_info info;
          info.kernel = kernel;
          info.stream = static_cast<std::uint64_t>(t + 1);
          launched.fetch_add(1);
          launch_path::notify_launch(info);
          std::this_thread::yield();
          launch_path::notify_profiled(kernel, testing::measured_on_device(1us));
        }
      });
    }
    for (auto& w : workers) w.join();
    done.store(true);
    snapshotter.join();
  }
  EXPECT_GT(snapshots, 0u);
  EXPECT_TRUE(never_ahead);
  EXPECT_TRUE(grew_monotonically);
  const auto got = observer->collect_bounded();
  constexpr auto total = static_cast<std::size_t>(threads * launches_each);
  EXPECT_EQ(got.summary.launches, total);
  EXPECT_EQ(got.summary.timed_launches, total);
  EXPECT_EQ(got.summary.lost, lost_measurements{});
  // Scope intervals take room too (two a launch here), so fewer than 3,000 launches fit.
  EXPECT_GT(got.trace_prefix.launches.size(), 0u);
  EXPECT_LE(got.trace_prefix.launches.size(), 3000u);
  EXPECT_EQ(got.trace_prefix.launches.size() + got.left_out.launches, total);
  for (const auto& launch : got.trace_prefix.launches) {
    ASSERT_TRUE(launch.scope.has_value());
    EXPECT_EQ(got.trace_prefix.scope_path(*launch.scope).front(), "worker");
  }
}

TEST(AttributionStress,
     EveryScopeIntervalIsKeptOrCountedLeftOutExactlyOnceWhilePassesAreCollected) {
  // A small trace prefix, emptied by each collect: most scopes begin with it full and read no
  // clock (their count taken without the log's lock), some begin in one pass and end in the next.
  constexpr int threads = 8;
  constexpr int pairs_each = 4000;
  attribution_options options;
  options.aggregate_only = true;
  options.trace_prefix_events = 64;
  auto observer = std::make_shared<attribution>(options);
  std::atomic<bool> done{false};
  std::size_t kept = 0;
  std::size_t left_out = 0;
  auto add = [&](const bounded_pass& pass) {
    for (const auto& thread : pass.trace_prefix.threads) kept += thread.scopes.size();
    left_out += pass.left_out.scope_intervals;
  };
  {
    launch_observation watching{observer};
    std::thread collector{[&] {
      while (!done.load()) add(observer->collect_bounded());
    }};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([t] {
        for (int i = 0; i < pairs_each; ++i) {
          scope outer{"worker"};
          scope inner{scope_names[static_cast<std::size_t>(t % worker_count)]};
        }
      });
    }
    for (auto& w : workers) w.join();
    done.store(true);
    collector.join();
  }
  add(observer->collect_bounded());
  EXPECT_EQ(kept + left_out, static_cast<std::size_t>(threads * pairs_each * 2));
  EXPECT_GT(left_out, 0u);
}

}  // namespace
}  // namespace launchwatch
