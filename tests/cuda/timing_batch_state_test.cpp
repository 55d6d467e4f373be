// The GPU timing batch's open/close protocol (src/backend/gpu/timing_batch_state.hpp, the CUDA
// and HIP backends' both) on the CPU: a read on another thread never closes a batch while a launch
// holds a slot of it without having submitted its kernel (review-2026-12-01b finding 4), and a
// batch a read asked for is always closed once that launch is submitted. Needs no GPU, and no
// CUDA: built in every preset.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backend/gpu/timing_batch_state.hpp"

namespace launchwatch::detail::gpu {
namespace {

constexpr std::uint32_t capacity = 64;

TEST(TimingBatchState, AReadWhileALaunchIsBetweenItsSlotAndItsKernelOnlyFlagsTheBatch) {
  timing_batch_state batch;
  ASSERT_EQ(batch.take(capacity), 0u);
  EXPECT_FALSE(batch.request_close()) << "the beacon would land before the launch's kernel";
  EXPECT_TRUE(batch.open());
  EXPECT_TRUE(batch.launched()) << "the launch, once submitted, closes the flagged batch";
  EXPECT_FALSE(batch.open());
}

TEST(TimingBatchState, AReadWithNoLaunchInTheGapClosesTheBatchAtOnce) {
  timing_batch_state batch;
  ASSERT_EQ(batch.take(capacity), 0u);
  EXPECT_FALSE(batch.launched()) << "nobody asked: the batch stays open for the next launches";
  EXPECT_TRUE(batch.request_close()) << "the reader closes it, and records the beacon";
  EXPECT_FALSE(batch.open());
  EXPECT_FALSE(batch.close()) << "closed once: nobody else records a beacon";
}

TEST(TimingBatchState, AFlaggedBatchIsClosedByTheLastLaunchInTheGapNotTheFirst) {
  timing_batch_state batch;
  ASSERT_EQ(batch.take(capacity), 0u);
  ASSERT_EQ(batch.take(capacity), 1u);
  EXPECT_FALSE(batch.request_close());
  EXPECT_FALSE(batch.launched());
  EXPECT_TRUE(batch.launched());
}

TEST(TimingBatchState, AClosedBatchGivesNoSlotAndIsClosedOnce) {
  timing_batch_state batch;
  EXPECT_TRUE(batch.close());
  EXPECT_FALSE(batch.take(capacity).has_value());
  EXPECT_FALSE(batch.close());
  EXPECT_FALSE(batch.request_close());
  EXPECT_FALSE(batch.launched());
}

TEST(TimingBatchState, AFullBatchGivesNoMoreSlots) {
  timing_batch_state batch;
  EXPECT_EQ(batch.take(2), 0u);
  EXPECT_EQ(batch.take(2), 1u);
  EXPECT_FALSE(batch.take(2).has_value());
  EXPECT_EQ(batch.used(), 2u);
}

TEST(TimingBatchState, AStreamsOwnCloseAfterAFlagLeavesNothingForItsLaunchesToClose) {
  timing_batch_state batch;
  ASSERT_EQ(batch.take(capacity), 0u);
  EXPECT_FALSE(batch.request_close());
  EXPECT_TRUE(batch.close());  // say, the batch was full after this launch
  EXPECT_FALSE(batch.launched());
}

/// One step of a schedule: a launch takes a slot or says its kernel was submitted, or the reader
/// asks for the batch.
enum class step { take, launched, read };

/// Runs `schedule`; fails if a step closes the batch while a launch holds a slot without having
/// submitted its kernel, or if a read is left waiting for a batch that never closes.
void check(const std::vector<step>& schedule, const std::string& name) {
  timing_batch_state batch;
  int in_gap = 0;  // launches that took a slot and did not submit, as the model counts them
  bool read = false;
  for (const step s : schedule) {
    bool close_now = false;
    switch (s) {
      case step::take:
        if (batch.take(capacity)) ++in_gap;
        break;
      case step::launched:
        if (in_gap == 0) continue;
        --in_gap;
        close_now = batch.launched();
        break;
      case step::read:
        read = true;
        close_now = batch.request_close();
        break;
    }
    if (close_now) {
      EXPECT_EQ(in_gap, 0) << name << ": closed with a launch between its slot and its kernel";
      EXPECT_FALSE(batch.open()) << name << ": told to record a beacon, yet still open";
    }
  }
  if (read) EXPECT_FALSE(batch.open()) << name << ": a read was left waiting";
}

TEST(TimingBatchState, EveryPlaceAReadCanFallAmongTwoLaunchesClosesOnlyOutsideTheGapAndAlways) {
  // The stream's launches are one after another (its lock); the read can come at any point.
  const std::vector<step> launches{step::take, step::launched, step::take, step::launched};
  for (std::size_t at = 0; at <= launches.size(); ++at) {
    std::vector<step> schedule = launches;
    schedule.insert(schedule.begin() + static_cast<std::ptrdiff_t>(at), step::read);
    check(schedule, "read before step " + std::to_string(at));
  }
  // Two slots taken before either kernel (a pinned stream's launches interleave only under its
  // lock, but a launch may take a slot after a read flagged the batch: it gets the next batch).
  check({step::take, step::read, step::take, step::launched, step::launched}, "taken after a read");
}

TEST(TimingBatchState, ReadersOnOtherThreadsNeverCloseABatchBeforeTheKernelsOfItsTakenSlots) {
  // One stream's launches (one thread: the stream's lock) fill batch after batch while two reader
  // threads keep asking for the batch in use. Whoever closes a batch (told so by exactly one call)
  // must find every slot taken so far submitted; run under TSan in CI. It goes on until the readers
  // have closed enough batches themselves (a loaded machine may not run them at first).
  constexpr int most_batches = 200'000;
  constexpr int enough_reads = 20;
  std::vector<timing_batch_state> states(most_batches);
  std::vector<std::atomic<std::uint32_t>> submitted(most_batches);
  std::vector<std::atomic<int>> closers(most_batches);
  std::atomic<int> current{0};
  std::atomic<bool> done{false};
  std::atomic<int> readers_running{0};
  std::atomic<int> early{0};  // closes that found a taken slot not yet submitted
  std::atomic<int> reads{0};  // batches a reader closed, or flagged for a launch to close
  const auto closed_by_me = [&](int b) {
    if (states[b].used() != submitted[b].load(std::memory_order_acquire)) ++early;
    closers[b].fetch_add(1, std::memory_order_relaxed);
  };
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      ++readers_running;
      while (!done.load(std::memory_order_acquire)) {
        const int b = current.load(std::memory_order_acquire);
        if (states[b].request_close()) {
          closed_by_me(b);
          ++reads;
        }
      }
    });
  }
  while (readers_running.load() < 2) std::this_thread::yield();
  int batches = 0;
  for (; batches < most_batches && (batches < 4000 || reads.load() < enough_reads); ++batches) {
    const int b = batches;
    current.store(b, std::memory_order_release);
    while (states[b].take(capacity)) {
      submitted[b].fetch_add(1, std::memory_order_release);  // the kernel, before launched()
      if (states[b].launched()) {                            // a reader flagged it
        closed_by_me(b);
        ++reads;
      }
    }
    if (states[b].close()) closed_by_me(b);  // full: the stream's own close
  }
  done.store(true, std::memory_order_release);
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(early.load(), 0) << "a beacon would have landed before a taken slot's kernel";
  for (int b = 0; b < batches; ++b) {
    ASSERT_EQ(closers[b].load(), 1) << "batch " << b << " closed " << closers[b].load() << " times";
  }
  EXPECT_GE(reads.load(), enough_reads)
      << "the readers closed or flagged too few batches in " << batches << ": it raced too little";
}

}  // namespace
}  // namespace launchwatch::detail::gpu
