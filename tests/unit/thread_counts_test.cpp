// Counters each thread adds to on its own line (core/interface/thread_counts.hpp), as the CUDA
// bridge counts its launches and awaited records. Run under the TSan preset too: a sum read while
// threads add is a race unless every line is an atomic.

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/interface/thread_counts.hpp"

namespace launchwatch::detail {
namespace {

TEST(ThreadCounts, ASumIsEveryAddOfEveryThreadThoseOwningALineAndThoseSharingOne) {
  thread_counts<2> counts;
  // More threads alive at once than there are owned lines, so some add with a locked increment on
  // a shared line while the others store to their own.
  constexpr int threads = static_cast<int>(thread_line::owned) + 16;
  constexpr int adds = 2000;
  std::atomic<int> started{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> adding;
  for (int t = 0; t < threads; ++t) {
    adding.emplace_back([&] {
      started.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < adds; ++i) {
        counts.add(0);
        counts.add(1, 3);
      }
    });
  }
  while (started.load() < threads) std::this_thread::yield();
  go.store(true);
  // Read while they add: never more than was added, and never less than a sum read before.
  std::uint64_t seen = 0;
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t now = counts.sum(0);
    EXPECT_GE(now, seen);
    EXPECT_LE(now, std::uint64_t{threads} * adds);
    seen = now;
  }
  for (auto& t : adding) t.join();
  EXPECT_EQ(counts.sum(0), std::uint64_t{threads} * adds);
  EXPECT_EQ(counts.sum(1), std::uint64_t{threads} * adds * 3);
}

TEST(ThreadCounts, AThreadGivenTheLineOfOneThatExitedKeepsItsCounts) {
  thread_counts<1> counts;
  // One after another: each thread likely starts on the line the one before returned at its exit,
  // and must add to what is on it, not start it again.
  for (int t = 0; t < 20; ++t) {
    std::thread{[&] { counts.add(0, 5); }}.join();
  }
  counts.add(0);
  EXPECT_EQ(counts.sum(0), 101u);
}

TEST(ThreadCounts, AnAddIsSeenByAThreadThatSawWhatTheAdderDidAfterIt) {
  thread_counts<1> counts;
  std::atomic<std::uint64_t> published{0};
  constexpr std::uint64_t rounds = 20000;
  std::thread adder{[&] {
    for (std::uint64_t i = 1; i <= rounds; ++i) {
      counts.add(0);
      published.store(i, std::memory_order_release);
    }
  }};
  std::uint64_t behind = 0;
  for (std::uint64_t seen = 0; seen < rounds;) {
    seen = published.load(std::memory_order_acquire);
    if (counts.sum(0) < seen) ++behind;
  }
  adder.join();
  EXPECT_EQ(behind, 0u);
}

}  // namespace
}  // namespace launchwatch::detail
