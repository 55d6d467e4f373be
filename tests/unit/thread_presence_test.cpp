// The per-thread presence counts under the observer slot's lock and the CUDA bridge's callback gate
// (core/interface/thread_presence.hpp), and the lock built on them (reader_lock.hpp). Run under the
// TSan preset too: a reader that read while a writer wrote would be reported there.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include "core/interface/reader_lock.hpp"
#include "core/interface/thread_presence.hpp"

namespace launchwatch::detail {
namespace {

using namespace std::chrono_literals;

/// Waits out `presence` on a thread of its own, as a rare thread does: turned away, fenced,
/// drained.
class background_waiter {
 public:
  explicit background_waiter(thread_presence& presence)
      : thread_{[this, &presence] {
          presence.wait_until_empty();
          done_.store(true);
        }} {}
  ~background_waiter() { thread_.join(); }
  background_waiter(const background_waiter&) = delete;
  background_waiter& operator=(const background_waiter&) = delete;

  bool done() const { return done_.load(); }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

TEST(ThreadPresence, AWaiterReturnsOnlyOnceTheThreadInsideLeft) {
  thread_presence presence;
  const thread_presence::ticket entered = presence.enter();
  {
    background_waiter waiter{presence};
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(waiter.done());
    thread_presence::leave(entered);
  }
}

TEST(ThreadPresence, EnteringTwiceNeedsLeavingTwice) {
  thread_presence presence;
  (void)presence.enter();
  (void)presence.enter();
  presence.leave();  // the form that reads the thread's line again
  {
    background_waiter waiter{presence};
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(waiter.done());
    presence.leave();
  }
}

TEST(ThreadPresence, AWaiterWaitsForThreadsBeyondTheSixtyFourthThatShareLines) {
  constexpr int threads = 3 * thread_line::owned;
  thread_presence presence;
  std::atomic<int> inside{0};
  std::atomic<bool> release{false};
  std::atomic<int> sharing{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      const thread_presence::ticket entered = presence.enter();
      if (!thread_line::is_owned(thread_line::of_this_thread())) sharing.fetch_add(1);
      inside.fetch_add(1);
      while (!release.load()) std::this_thread::sleep_for(1ms);
      thread_presence::leave(entered);
    });
  }
  while (inside.load() < threads) std::this_thread::sleep_for(1ms);
  EXPECT_GE(sharing.load(), threads - static_cast<int>(thread_line::owned));
  {
    background_waiter waiter{presence};
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(waiter.done());
    release.store(true);
    for (auto& thread : pool) thread.join();
  }
}

TEST(ThreadLine, AThreadsOwnedLineIsReturnedWhenItExits) {
  // Each thread ends before the next starts: without the return, the 65th would find none free.
  for (int t = 0; t < 3 * static_cast<int>(thread_line::owned); ++t) {
    bool owns = false;
    std::thread{[&] { owns = thread_line::is_owned(thread_line::of_this_thread()); }}.join();
    ASSERT_TRUE(owns) << "thread " << t;
  }
}

TEST(ThreadLine, AForkedChildFreesTheLinesOwnedByTheParentsOtherThreads) {
  (void)thread_line::of_this_thread();
  // Threads alive across the fork, owning every owned line the process has not yet given out.
  std::mutex mutex;
  std::condition_variable changed;
  int claimed = 0;
  bool release = false;
  std::vector<std::thread> owners;
  for (std::size_t t = 0; t < thread_line::owned; ++t) {
    owners.emplace_back([&] {
      (void)thread_line::of_this_thread();
      std::unique_lock lock{mutex};
      ++claimed;
      changed.notify_all();
      changed.wait(lock, [&] { return release; });
    });
  }
  bool full = false;
  {
    std::unique_lock lock{mutex};
    changed.wait(lock, [&] { return claimed == static_cast<int>(thread_line::owned); });
    std::thread{[&] { full = !thread_line::is_owned(thread_line::of_this_thread()); }}.join();
  }
  const pid_t child = full ? ::fork() : -1;
  if (child == 0) {
    // Only this thread lives here: a line claimed now is owned unless the absent threads' are
    // still taken. No thread is started in the child (ThreadSanitizer forbids it).
    ::_exit(thread_line::is_owned(thread_line::claim()) ? 0 : 1);
  }
  int status = -1;
  if (child > 0) (void)::waitpid(child, &status, 0);
  {
    std::lock_guard lock{mutex};
    release = true;
  }
  changed.notify_all();
  for (auto& t : owners) t.join();
  ASSERT_TRUE(full) << "the parent's threads did not take every owned line";
  ASSERT_GT(child, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's next thread would share a line";
}

/// A value a writer changes in two steps; a reader that saw the two differ read during a write.
struct two_halves {
  std::uint64_t first = 0;
  std::uint64_t second = 0;
};

/// Readers (half through std::shared_lock, half through reader_lock) and a writer at once for
/// 200 ms; returns how many reads saw a write half done.
std::uint64_t torn_reads_under_churn() {
  distributed_shared_mutex mutex;
  two_halves value;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> torn{0};
  std::atomic<std::uint64_t> reads{0};
  std::vector<std::thread> readers;
  const auto read = [&] {
    const std::uint64_t first = value.first;
    std::this_thread::yield();  // a writer that did not wait would change the value meanwhile
    if (first != value.second) torn.fetch_add(1);
    reads.fetch_add(1, std::memory_order_relaxed);
  };
  for (int r = 0; r < 4; ++r) {
    // Half through std::shared_lock (lock_shared, unlock_shared), half through reader_lock.
    readers.emplace_back([&, r] {
      while (!stop.load(std::memory_order_relaxed)) {
        if (r % 2 == 0) {
          std::shared_lock lock{mutex};
          read();
        } else {
          reader_lock lock{mutex};
          read();
        }
      }
    });
  }
  std::uint64_t writes = 0;
  const auto until = std::chrono::steady_clock::now() + 200ms;
  while (std::chrono::steady_clock::now() < until || reads.load() < 1000 || writes < 100) {
    {
      std::unique_lock lock{mutex};
      ++value.first;
      std::this_thread::yield();
      ++value.second;
      ++writes;
    }
    std::this_thread::sleep_for(100us);  // the lock prefers writers: let readers in between
  }
  stop.store(true);
  for (auto& reader : readers) reader.join();
  return torn.load();
}

TEST(DistributedSharedMutex, ReadersNeverSeeAWriteHalfDone) {
  asymmetric_fence::prepare();
  EXPECT_EQ(torn_reads_under_churn(), 0u);
}

TEST(DistributedSharedMutex, ReadersNeverSeeAWriteHalfDoneWhereMembarrierIsRefused) {
  // As on a kernel or sandbox without it: readers take the locked increment, the writer a plain
  // fence. Nothing else runs in this process meanwhile, so the switch misleads no reader.
  const bool was = asymmetric_fence::membarrier_ready.exchange(false);
  EXPECT_EQ(torn_reads_under_churn(), 0u);
  asymmetric_fence::membarrier_ready.store(was);
}

TEST(DistributedSharedMutex, AWriterWaitsForAReaderLockUntilItIsUnlocked) {
  distributed_shared_mutex mutex;
  reader_lock reading{mutex};
  std::atomic<bool> written{false};
  std::thread writer{[&] {
    std::unique_lock lock{mutex};
    written.store(true);
  }};
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(written.load());
  reading.unlock();
  writer.join();
  EXPECT_TRUE(written.load());
}

}  // namespace
}  // namespace launchwatch::detail
