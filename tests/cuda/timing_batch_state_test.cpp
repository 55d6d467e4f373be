// The GPU timing batch's open/close protocol (src/backend/gpu/timing_batch_state.hpp, the CUDA
// and HIP backends' both) on the CPU: a read on another thread never closes a batch while a launch
// holds a slot of it without having submitted its kernel (review-2026-12-01b finding 4), and a
// batch a read asked for is always closed once that launch is submitted. Needs no GPU, and no
// CUDA: built in every preset.
#include <cstdint>
#include <string>
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
  EXPECT_TRUE(batch.open);
  EXPECT_TRUE(batch.launched()) << "the launch, once submitted, closes the flagged batch";
}

TEST(TimingBatchState, AReadWithNoLaunchInTheGapClosesTheBatchAtOnce) {
  timing_batch_state batch;
  ASSERT_EQ(batch.take(capacity), 0u);
  EXPECT_FALSE(batch.launched()) << "nobody asked: the batch stays open for the next launches";
  EXPECT_TRUE(batch.request_close());
  EXPECT_TRUE(batch.close());
  EXPECT_FALSE(batch.open);
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
  EXPECT_EQ(batch.used, 2u);
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

/// Runs `schedule`, closing the batch whenever a step says to; fails if a close happens while a
/// launch holds a slot without having submitted its kernel, or if a read is left waiting for a
/// batch that never closes.
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
      EXPECT_TRUE(batch.close()) << name;
    }
  }
  if (read) EXPECT_FALSE(batch.open) << name << ": a read was left waiting";
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

}  // namespace
}  // namespace launchwatch::detail::gpu
