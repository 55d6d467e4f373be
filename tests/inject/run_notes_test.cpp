// What `launchwatch run` says at the program's end about launches it counted without reporting or
// timing them (src/inject/run_notes.hpp), from the bridge's counts.
#include <chrono>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "inject/run_notes.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using detail::capture_range_note;
using detail::records_taken_note;
using detail::timing_windows_note;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(RunNotes, WithoutTheCaptureRangeNothingIsSaidAboutIt) {
  cuda_bridge_stats stats;
  stats.launches_reported = 10;
  EXPECT_FALSE(capture_range_note(false, stats).has_value());
}

TEST(RunNotes, AProgramThatLaunchedNothingHasNothingSaidAboutTheCaptureRange) {
  EXPECT_FALSE(capture_range_note(true, cuda_bridge_stats{}).has_value());
}

TEST(RunNotes, TheCaptureRangeSaysHowManyLaunchesWereInsideItAndHowManyOutside) {
  cuda_bridge_stats stats;
  stats.launches_reported = 1200;
  stats.outside_capture_range = 34;
  const auto note = capture_range_note(true, stats);
  ASSERT_TRUE(note.has_value());
  EXPECT_THAT(*note,
              HasSubstr("the report holds the 1200 CUDA launches between cudaProfilerStart"));
  EXPECT_THAT(*note, HasSubstr("the 34 outside them were counted, neither reported nor timed"));
}

TEST(RunNotes, ACaptureRangeThatNeverOpenedSaysTheReportIsEmptyForThatReasonAndWhatToDo) {
  cuda_bridge_stats stats;
  stats.outside_capture_range = 5000;
  const auto note = capture_range_note(true, stats);
  ASSERT_TRUE(note.has_value());
  EXPECT_THAT(*note, HasSubstr("no CUDA launch fell between cudaProfilerStart and "
                               "cudaProfilerStop (5000 outside them were counted only)"));
  EXPECT_THAT(*note, HasSubstr("torch.cuda.profiler.start()"));
  EXPECT_THAT(*note, HasSubstr("run without --capture-range to watch every launch"));
}

TEST(RunNotes, TimingWindowsSayTheShareOfLaunchesTimedAndThatNothingIsScaled) {
  cuda_bridge_stats stats;
  stats.launches_reported = 1000;
  stats.untimed_outside_windows = 750;
  stats.untimed_records_elsewhere = 50;
  stats.timing_windows_opened = 12;
  const auto note = timing_windows_note(cuda_timing_windows{20ms, 80ms}, stats);
  ASSERT_TRUE(note.has_value());
  EXPECT_THAT(*note, HasSubstr("timing windows of 20 ms every 100 ms (12 opened): device time for "
                               "200 of 1000 CUDA launches (20.0%); the other 800"));
  EXPECT_THAT(*note, HasSubstr("no time is scaled up"));
  EXPECT_FALSE(timing_windows_note(std::nullopt, stats).has_value());
}

TEST(RunNotes, RecordsHeldByAnotherCuptiClientSayTheTimesArePartial) {
  cuda_bridge_stats stats;
  EXPECT_FALSE(records_taken_note(stats).has_value());
  stats.records_taken_windows = 2;
  stats.records_taken_for = 1500ms;
  stats.untimed_records_elsewhere = 40;
  const auto note = records_taken_note(stats);
  ASSERT_TRUE(note.has_value());
  EXPECT_THAT(*note, HasSubstr("held CUPTI's kernel records 2 time(s), 1.5 s in all; the 40 CUDA "
                               "launch(es)"));
  EXPECT_THAT(*note, Not(HasSubstr("windows of")));
}

}  // namespace
}  // namespace launchwatch
