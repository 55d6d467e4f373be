// The peers harness's arithmetic and renderers, with numbers chosen by hand: the GPU run itself
// cannot be tested on a machine without one, but what it computes from its timestamps can.
#include "analysis.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "results.hpp"

namespace launchwatch::peers {
namespace {

TEST(PeersSpread, GivesTheMedianAndInterpolatedPercentiles) {
  const spread s = summarize({11, 1, 10, 2, 9, 3, 8, 4, 7, 5, 6});
  EXPECT_EQ(s.count, 11u);
  EXPECT_DOUBLE_EQ(s.median, 6.0);
  EXPECT_DOUBLE_EQ(s.p10, 2.0);
  EXPECT_DOUBLE_EQ(s.p90, 10.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 11.0);
}

TEST(PeersSpread, InterpolatesBetweenOrderStatistics) {
  const spread s = summarize({0, 10});
  EXPECT_DOUBLE_EQ(s.median, 5.0);
  EXPECT_DOUBLE_EQ(s.p10, 1.0);
  EXPECT_DOUBLE_EQ(s.p90, 9.0);
}

TEST(PeersSpread, OfNothingIsNotANumberRatherThanZero) {
  const spread s = summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_TRUE(std::isnan(s.median));
  EXPECT_TRUE(std::isnan(s.p90));
}

TEST(PeersRatio, TakesEachRoundsRatioBeforeTheMedian) {
  // Per round: 2, 1, 5 -> median 2. The ratio of the medians would be 12 / 12 = 1.
  const spread r = ratio_per_round({10, 12, 100}, {5, 12, 20});
  EXPECT_DOUBLE_EQ(r.median, 2.0);
  EXPECT_EQ(r.count, 3u);
}

TEST(PeersRatio, LeavesOutRoundsWithNoDenominator) {
  const spread r = ratio_per_round({10, 12, 100}, {5, 0, 20});
  EXPECT_EQ(r.count, 2u);
  EXPECT_DOUBLE_EQ(r.median, 3.5);
}

TEST(PeersRatio, RefusesSeriesOfDifferentLengths) {
  EXPECT_THROW((void)ratio_per_round({1, 2}, {1}), std::invalid_argument);
}

TEST(PeersIdleTime, IsTheWindowMinusTheUnionOfKernelWindows) {
  const idle_summary idle = idle_time({{20, 30}, {0, 10}, {5, 15}});
  EXPECT_EQ(idle.window_ns, 30);
  EXPECT_EQ(idle.busy_ns, 25);
  EXPECT_EQ(idle.idle_ns, 5);
  EXPECT_EQ(idle.kernels, 3u);
}

TEST(PeersIdleTime, CountsAKernelInsideAnotherOnce) {
  const idle_summary idle = idle_time({{0, 100}, {10, 20}, {150, 160}});
  EXPECT_EQ(idle.window_ns, 160);
  EXPECT_EQ(idle.busy_ns, 110);
  EXPECT_EQ(idle.idle_ns, 50);
}

TEST(PeersIdleTime, CountsAReversedWindowAsEmptyAtItsStart) {
  const idle_summary idle = idle_time({{0, 10}, {40, 30}});
  EXPECT_EQ(idle.window_ns, 40);
  EXPECT_EQ(idle.busy_ns, 10);
  EXPECT_EQ(idle.idle_ns, 30);
}

TEST(PeersIdleTime, OfNoKernelsIsZero) {
  const idle_summary idle = idle_time({});
  EXPECT_EQ(idle.window_ns, 0);
  EXPECT_EQ(idle.idle_ns, 0);
}

TEST(PeersAgreement, ReportsBiasAndRelativeErrorsKernelByKernel) {
  const agreement a = compare_durations({110, 200, 300, 400}, {100, 200, 300, 500});
  EXPECT_EQ(a.pairs, 4u);
  // Relative errors 0.1, 0, 0, 0.2 -> median 0.05; p99 close to the largest.
  EXPECT_DOUBLE_EQ(a.median_relative_error, 0.05);
  EXPECT_NEAR(a.p99_relative_error, 0.197, 1e-9);
  // Signed errors +10, 0, 0, -100 -> median 0.
  EXPECT_DOUBLE_EQ(a.median_signed_error_ns, 0.0);
  EXPECT_DOUBLE_EQ(a.median_measured_ns, 250.0);
  EXPECT_DOUBLE_EQ(a.median_reference_ns, 250.0);
}

TEST(PeersAgreement, KeepsAZeroLengthReferenceFinite) {
  const agreement a = compare_durations({32}, {0});
  EXPECT_DOUBLE_EQ(a.median_relative_error, 32.0);
}

TEST(PeersAgreement, RefusesSeriesOfDifferentLengths) {
  EXPECT_THROW((void)compare_durations({1, 2, 3}, {1, 2}), std::invalid_argument);
}

run_results two_case_run() {
  run_results r;
  r.device_name = "test device";
  r.rounds = 3;
  r.launches_per_batch = 1000;
  launch_cost_case raw;
  raw.name = "raw";
  raw.label = "raw cudaLaunchKernel";
  raw.issue_ns = {3000, 3100, 3200};
  raw.drain_ns = {10, 10, 10};
  raw.total_ns = {3010, 3110, 3210};
  r.launch_cost.push_back(raw);
  launch_cost_case skipped;
  skipped.name = "lw_idle";
  skipped.label = "launchwatch, nothing observing";
  skipped.owner = side::launchwatch;
  skipped.skipped = "no CUDA client";
  r.launch_cost.push_back(skipped);
  return r;
}

TEST(PeersReport, ShowsASkippedCaseAsSkippedWithItsReason) {
  const std::string table = render_tables(two_case_run());
  EXPECT_NE(table.find("launchwatch, nothing observing"), std::string::npos);
  EXPECT_NE(table.find("skipped: no CUDA client"), std::string::npos);
  // The raw row: median 3.10 µs, p10-p90 3.02-3.18, and 1.00x itself.
  EXPECT_NE(table.find("3.10 [3.02-3.18]"), std::string::npos);
  EXPECT_NE(table.find("1.00x [1.00-1.00]"), std::string::npos);
}

TEST(PeersReport, TakesEachCasesRatioAgainstTheRawCaseOfItsPhase) {
  run_results r = two_case_run();
  launch_cost_case raw_b;
  raw_b.name = "raw_b";
  raw_b.label = "raw again";
  raw_b.phase = "cupti";
  raw_b.baseline = "raw_b";
  raw_b.issue_ns = {1000, 1000, 1000};
  raw_b.drain_ns = {0, 0, 0};
  raw_b.total_ns = {1000, 1000, 1000};
  launch_cost_case tool = raw_b;
  tool.name = "tool";
  tool.label = "a CUPTI tool";
  tool.owner = side::peer;
  tool.issue_ns = {1500, 1500, 1500};
  tool.total_ns = {1500, 1500, 1500};
  r.launch_cost.push_back(raw_b);
  r.launch_cost.push_back(tool);
  const std::string json = render_json(r);
  // 1500 / 1000 against its own phase's raw, not 1500 / 3100 against the clean phase's.
  EXPECT_NE(json.find(R"("issue_ratio_to_raw": {"median": 1.5,)"), std::string::npos) << json;
  EXPECT_NE(render_tables(r).find("-- phase cupti"), std::string::npos);
}

TEST(PeersReport, WritesAMissingNumberAsNullInJson) {
  const std::string json = render_json(two_case_run());
  EXPECT_NE(json.find(R"("name": "lw_idle")"), std::string::npos);
  EXPECT_NE(json.find(R"("skipped": "no CUDA client")"), std::string::npos);
  EXPECT_NE(json.find(R"("issue_ns": {"median": null)"), std::string::npos);
  EXPECT_EQ(json.find("nan"), std::string::npos);
}

}  // namespace
}  // namespace launchwatch::peers
