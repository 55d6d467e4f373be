// The kernel table: a kernel's rows over every scope gathered into one, hottest first, with its
// count, total, average, shortest and longest launch; written as a table, as CSV and as JSON.

#include <launchwatch/report/kernel_table.hpp>
#include <launchwatch/report/summary.hpp>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sample_passes.hpp"
#include "support/csv_reader.hpp"
#include "support/golden.hpp"
#include "written_by.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using testing::pass_builder;

/// Kernel `k` launched 10 us and 30 us in scope `a`, 5 us in `a/b` and 50 us outside any scope;
/// kernel `j` once for 20 us in `a`, and once as a dry run.
pass_summary spread_kernel() {
  pass_builder b;
  const auto t = b.thread("t");
  const auto s = b.stream(1);
  b.kernel({t, "k", {"a"}, s, 0us, 0us}, 0us, 10us);
  b.kernel({t, "k", {"a"}, s, 1us, 1us}, 10us, 40us);
  b.kernel({t, "j", {"a"}, s, 2us, 2us}, 40us, 60us);
  b.launch({t, "j", {"a"}, s, 3us, 3us}).dry_run = true;
  b.kernel({t, "k", {"a", "b"}, s, 4us, 4us}, 60us, 65us);
  b.kernel({t, "k", {}, s, 5us, 5us}, 65us, 115us);
  return summarize(b.pass());
}

std::string written(const pass_summary& summary, kernel_table_options options = {}) {
  std::ostringstream out;
  write_kernel_table(out, summary, options);
  return out.str();
}

TEST(KernelTable, GathersAKernelsRowsOverEveryScopeItRanIn) {
  const auto table = build_kernel_table(spread_kernel());
  ASSERT_EQ(table.rows.size(), 2u);
  const auto& k = table.rows[0];
  EXPECT_EQ(k.name, "k");
  EXPECT_EQ(k.launches, 4u);
  EXPECT_EQ(k.total, 95us);
  EXPECT_EQ(k.average(), std::chrono::nanoseconds{23'750});
  EXPECT_EQ(k.min_time, 5us);
  EXPECT_EQ(k.max_time, 50us);
}

TEST(KernelTable, CountsDryRunsButTakesTheAverageOverTimedLaunchesOnly) {
  const auto table = build_kernel_table(spread_kernel());
  const auto& j = table.rows[1];
  EXPECT_EQ(j.name, "j");
  EXPECT_EQ(j.launches, 2u);
  EXPECT_EQ(j.dry_run_launches, 1u);
  EXPECT_EQ(j.average(), 20us);
}

TEST(KernelTable, PutsTheKernelWithTheMostTimeFirst) {
  // The sample pass: matmul (300 us over four scopes) beats fill (50 us) though fill comes first;
  // softmax and copy tie at 40 us, and softmax has more launches.
  const auto table = build_kernel_table(summarize(testing::sample_pass()));
  std::vector<std::string> names;
  for (const auto& row : table.rows) names.push_back(row.name);
  EXPECT_THAT(names, ElementsAre(std::string{testing::matmul}, std::string{testing::fill},
                                 std::string{testing::softmax}, std::string{testing::copy},
                                 std::string{testing::gelu}, std::string{testing::layer_norm}));
}

TEST(KernelTable, MatchesTheGoldenFile) {
  testing::expect_matches_golden("kernels.txt", written(summarize(testing::sample_pass())));
}

TEST(KernelTable, ShowsLaunchesOnlyForAnUntimedPass) {
  const auto text = written(summarize(testing::untimed_pass()));
  EXPECT_THAT(text, ContainsRegex("\nkernel +launches\n"));
  EXPECT_THAT(text, ContainsRegex("\nmatmul \\| float \\| 16 +2\n"));
}

TEST(KernelTable, ShowsUnknownMinAndMaxOfAnOlderSummaryAsADash) {
  auto summary = spread_kernel();
  // What a summary.json written before min_ns and max_ns reads back as.
  for (auto& scope : summary.scopes) {
    for (auto& child : scope.children) child.min_time = child.max_time = std::nullopt;
  }
  const auto table = build_kernel_table(summary);
  EXPECT_EQ(table.rows[0].min_time, std::nullopt);  // k's outside row still has its own
  EXPECT_THAT(written(summary), ContainsRegex("\nk +4 +95\\.0 us +23\\.8 us +- +- +"));
}

TEST(KernelTableCsv, HasTheHeaderItsDocumentationNames) {
  const auto records = testing::read_csv(written(spread_kernel(), {name_format::full, report_format::csv}));
  ASSERT_FALSE(records.empty());
  EXPECT_THAT(records[0], ElementsAre("kernel", "count", "total_ns", "avg_ns", "min_ns", "max_ns", "share"));
}

TEST(KernelTableCsv, GivesIntegerNanosecondsAndTheShareAsAFraction) {
  const auto records = testing::read_csv(written(spread_kernel(), {name_format::full, report_format::csv}));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_THAT(records[1], ElementsAre("k", "4", "95000", "23750", "5000", "50000", "0.8260869565217391"));
  EXPECT_THAT(records[2], ElementsAre("j", "2", "20000", "20000", "20000", "20000", "0.17391304347826086"));
}

TEST(KernelTableCsv, NamesWithCommasAndQuotesReadBackWhole) {
  pass_builder b;
  const auto t = b.thread("t");
  const auto s = b.stream(1);
  const std::string comma = "ops::matmul<float, 16>";
  const std::string quote = "ops::say<\"hi\", 2>";
  b.kernel({t, comma, {"a"}, s, 0us, 0us}, 0us, 20us);
  b.kernel({t, quote, {"a"}, s, 1us, 1us}, 20us, 30us);
  const auto records = testing::read_csv(written(summarize(b.pass()), {name_format::full, report_format::csv}));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1][0], comma);
  EXPECT_EQ(records[2][0], quote);
  EXPECT_EQ(records[1].size(), 7u);
  EXPECT_EQ(records[2].size(), 7u);
}

TEST(KernelTableCsv, LeavesWhatIsUnknownEmpty) {
  const auto records =
      testing::read_csv(written(summarize(testing::untimed_pass()), {name_format::full, report_format::csv}));
  ASSERT_GE(records.size(), 2u);
  EXPECT_THAT(records[1], ElementsAre(std::string{testing::matmul}, "2", "", "", "", "", ""));
}

TEST(KernelTableJson, HoldsTheSameRowsAsTheCsv) {
  const auto j = nlohmann::json::parse(written(spread_kernel(), {name_format::full, report_format::json}));
  EXPECT_EQ(j["format"], "launchwatch-kernels");
  EXPECT_EQ(j["kernel_ns"], 115'000);
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& k = j["rows"][0];
  EXPECT_EQ(k["kernel"], "k");
  EXPECT_EQ(k["count"], 4);
  EXPECT_EQ(k["total_ns"], 95'000);
  EXPECT_EQ(k["avg_ns"], 23'750);
  EXPECT_EQ(k["min_ns"], 5'000);
  EXPECT_EQ(k["max_ns"], 50'000);
  EXPECT_DOUBLE_EQ(k["share"].get<double>(), 95.0 / 115.0);
}

TEST(KernelTableJson, WritesNullForWhatIsUnknown) {
  const auto j =
      nlohmann::json::parse(written(summarize(testing::untimed_pass()), {name_format::full, report_format::json}));
  EXPECT_TRUE(j["rows"][0]["min_ns"].is_null());
  EXPECT_TRUE(j["rows"][0]["share"].is_null());
}

// --- the writers: one golden file per format ---

TEST(KernelsTableWriter, MatchesTheGoldenFile) {
  kernels_table_writer writer;
  testing::expect_matches_golden("kernels.txt",
                                 testing::written_by(writer, summarize(testing::sample_pass())));
}

TEST(KernelsCsvWriter, MatchesTheGoldenFile) {
  kernels_csv_writer writer;
  testing::expect_matches_golden("kernels.csv",
                                 testing::written_by(writer, summarize(testing::sample_pass())));
}

TEST(KernelsJsonWriter, MatchesTheGoldenFile) {
  kernels_json_writer writer;
  testing::expect_matches_golden("kernels.json",
                                 testing::written_by(writer, summarize(testing::sample_pass())));
}

}  // namespace
}  // namespace launchwatch
