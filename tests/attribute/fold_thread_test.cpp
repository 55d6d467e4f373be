// An aggregate-only attribution folds its threads' launches on a thread of its own where the
// process has cores to spare: the launching thread hands them over and reads no measurement, unless
// the fold thread falls two folds behind, when the launching thread waits and folds them itself;
// elsewhere the launching thread folds. Run under the TSan preset too (label `concurrency`).
#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/launch_path.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "attribute/fold_thread.hpp"
#include "support/thread_names.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;

/// Launches per fold (detail::fold_every) and how many folds may wait for the fold thread
/// (detail::fold_backlog / fold_every).
constexpr int fold_every = 4096;
constexpr int backlog_folds = 2;

/// Where the measurements were read: the threads that resolved them, and a gate that holds the
/// first read until opened (to keep the fold thread busy).
class measurement_reads {
 public:
  /// A 1 µs measurement that notes the reading thread when read; the first waits for open() if
  /// the gate was closed.
  profile_duration measurement(bool first) {
    return profile_duration{[this, first]() -> std::optional<profile_ticks> {
                              note_read(first);
                              const instant start{};
                              return profile_ticks::from_start_end(start, start + 1us);
                            },
                            timing_method::device};
  }

  /// Closes the gate before any read: the first measurement's read waits for open().
  void close_gate() {
    std::lock_guard lock{mutex_};
    open_ = false;
  }

  void open() {
    {
      std::lock_guard lock{mutex_};
      open_ = true;
    }
    changed_.notify_all();
  }

  /// Waits up to `limit` for a first read; false if none came.
  bool wait_for_a_read(std::chrono::seconds limit) {
    std::unique_lock lock{mutex_};
    return changed_.wait_for(lock, limit, [&] { return !readers_.empty(); });
  }

  std::set<std::thread::id> readers() {
    std::lock_guard lock{mutex_};
    return readers_;
  }

 private:
  void note_read(bool first) {
    std::unique_lock lock{mutex_};
    readers_.insert(std::this_thread::get_id());
    changed_.notify_all();
    if (first) changed_.wait(lock, [&] { return open_; });
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::set<std::thread::id> readers_;
  bool open_ = true;
};

/// Makes the attributions made while it lives fold on a thread (`use`) or not, whatever the
/// machine's cores: the tests below are about the thread, and a 2-core machine would not use it.
class fold_thread_decided {
 public:
  explicit fold_thread_decided(bool use) { detail::fold_thread::decide_for_testing(use); }
  ~fold_thread_decided() { detail::fold_thread::decide_for_testing(std::nullopt); }
  fold_thread_decided(const fold_thread_decided&) = delete;
  fold_thread_decided& operator=(const fold_thread_decided&) = delete;
};

attribution_options aggregate_only() {
  attribution_options options;
  options.aggregate_only = true;
  return options;
}

/// One launch of `k` and its measurement, as a runtime's launch path reports them.
void launch_measured(measurement_reads& reads, bool first) {
  launch_info info;
  info.kernel = "k";
  info.stream = 1;
  launch_path::notify_launch(info);
  launch_path::notify_profiled("k", reads.measurement(first));
}

/// One fold's worth of launches and the launch that hands it over (the first one's read waits at
/// `reads`' gate, if closed); nothing else folds until a collect.
void hand_one_fold_over(measurement_reads& reads) {
  for (int i = 0; i < fold_every + 1; ++i) launch_measured(reads, i == 0);
}

TEST(AggregateFold, ReadsALaunchingThreadsMeasurementsOnAnotherThread) {
  const fold_thread_decided threaded{true};
  auto observer = std::make_shared<attribution>(aggregate_only());
  measurement_reads reads;
  launch_observation watching{observer};
  hand_one_fold_over(reads);
  ASSERT_TRUE(reads.wait_for_a_read(30s)) << "no fold read the handed-over launches";
  const auto readers = reads.readers();
  EXPECT_EQ(readers.count(std::this_thread::get_id()), 0u)
      << "the launching thread read its own launches' measurements";
  EXPECT_EQ(observer->collect_summary().launches, static_cast<std::size_t>(fold_every + 1));
}

TEST(AggregateFold, HoldsALaunchingThreadBackWhileTheFoldThreadIsMoreThanTwoFoldsBehind) {
  const fold_thread_decided threaded{true};
  auto observer = std::make_shared<attribution>(aggregate_only());
  measurement_reads reads;
  reads.close_gate();  // the fold thread's first read waits: it falls behind from its first fold
  constexpr int wanted = 10 * fold_every;
  std::atomic<int> returned{0};
  launch_observation watching{observer};
  std::thread launcher{[&] {
    for (int i = 0; i < wanted; ++i) {
      launch_measured(reads, i == 0);
      returned.fetch_add(1);
      // Once the first fold is handed over, on until the fold thread holds it: a fold thread slow
      // to start (a loaded machine) would leave the backlog to fill sooner, not the rule's doing.
      if (i == fold_every) (void)reads.wait_for_a_read(30s);
    }
  }};
  // The launch that hands over the fold past the backlog waits for the busy fold thread: one fold
  // being folded, `backlog_folds` waiting, and one more being handed over.
  constexpr int held_at = (backlog_folds + 2) * fold_every;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (returned.load() < held_at && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(returned.load(), held_at);
  reads.open();
  launcher.join();
  const auto summary = observer->collect_summary();
  EXPECT_EQ(summary.launches, static_cast<std::size_t>(wanted));
  EXPECT_EQ(summary.timed_launches, static_cast<std::size_t>(wanted));
}

TEST(AggregateFold, ACollectWhileTheFoldThreadIsBehindCountsEveryLaunchOnce) {
  const fold_thread_decided threaded{true};
  auto observer = std::make_shared<attribution>(aggregate_only());
  measurement_reads reads;
  reads.close_gate();
  constexpr int launched = 3 * fold_every + 5;
  {
    launch_observation watching{observer};
    // The first hand-over, then the fold thread takes it and waits at its first read: only then do
    // the next two stay handed over. Launched in one go, a fold thread slow to start (a loaded
    // machine) left three handed over, past the backlog, and the launching thread folded them
    // itself, waiting at the closed gate for good.
    hand_one_fold_over(reads);
    const bool reading = reads.wait_for_a_read(30s);
    if (!reading) reads.open();
    ASSERT_TRUE(reading) << "the fold thread never read the first fold";
    for (int i = fold_every + 1; i < launched; ++i) launch_measured(reads, false);
  }
  // The collect waits for the fold thread's fold, then folds the rest itself.
  std::thread opener{[&] {
    std::this_thread::sleep_for(50ms);
    reads.open();
  }};
  const auto summary = observer->collect_summary();
  opener.join();
  EXPECT_EQ(summary.launches, static_cast<std::size_t>(launched));
  EXPECT_EQ(summary.timed_launches, static_cast<std::size_t>(launched));
  EXPECT_EQ(observer->collect_summary().launches, 0u);
}

TEST(AggregateFold, FoldsOnTheLaunchingThreadWhereNoCoreIsToSpare) {
  const fold_thread_decided threaded{false};
  auto observer = std::make_shared<attribution>(aggregate_only());
  measurement_reads reads;
  launch_observation watching{observer};
  for (int i = 0; i < fold_every + 1; ++i) launch_measured(reads, false);
  // Read before the last launch returned: the launch that handed the fold over folded it.
  const auto readers = reads.readers();
  ASSERT_EQ(readers.size(), 1u);
  EXPECT_EQ(readers.count(std::this_thread::get_id()), 1u);
  EXPECT_EQ(observer->collect_summary().launches, static_cast<std::size_t>(fold_every + 1));
}

TEST(AggregateFold, TheFoldThreadIsNamedLwFoldForTheToolsThatWatchTheProcess) {
  if (testing::thread_names().empty()) GTEST_SKIP() << "no /proc/self/task here";
  const fold_thread_decided threaded{true};
  auto observer = std::make_shared<attribution>(aggregate_only());
  measurement_reads reads;
  launch_observation watching{observer};
  hand_one_fold_over(reads);
  ASSERT_TRUE(reads.wait_for_a_read(30s)) << "no fold read the handed-over launches";
  EXPECT_TRUE(testing::thread_named_within("lw-fold"));
  // Collected before `reads` goes: the fold thread may still be reading its measurements.
  EXPECT_EQ(observer->collect_summary().launches, static_cast<std::size_t>(fold_every + 1));
}

}  // namespace
}  // namespace launchwatch
