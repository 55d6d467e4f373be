// Comparing two summaries: growth, shrinkage, new and vanished rows, and the threshold a CI fails at.

#include <launchwatch/report/diff.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/tree.hpp>

#include <sstream>
#include <string>

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
using ::testing::HasSubstr;
using testing::pass_builder;

/// A pass of one scope `model` with kernel `a` (launches times `a_length`) and, when asked, `b`.
pass_summary model(int a_launches, std::chrono::nanoseconds a_length, bool with_b = false,
                   timing_request timing = timing_request::deferred) {
  pass_builder b{timing};
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  std::chrono::nanoseconds at{0};
  for (int i = 0; i < a_launches; ++i) {
    if (timing == timing_request::none) {
      b.launch({t, "a", {"model"}, s1, at, at});
    } else {
      b.kernel({t, "a", {"model"}, s1, at, at}, at, at + a_length);
    }
    at += a_length + 1us;
  }
  if (with_b) b.kernel({t, "b", {"model"}, s1, at, at}, at, at + 5us);
  return summarize(b.pass());
}

const diff_row& row_named(const summary_diff& diff, std::string_view name) {
  for (const auto& row : diff.rows) {
    if (row.name == name) return row;
  }
  throw std::out_of_range{"no row " + std::string{name}};
}

/// The sample pass against itself changed: every kernel 5us longer, the loader's kernel gone, and
/// a new kernel in layer 1's attention (the golden files' comparison).
summary_diff sample_diff() {
  auto current = testing::sample_pass();
  for (auto& launch : current.launches) {
    if (launch.timing && launch.timing->ticks) {
      launch.timing->ticks = profile_ticks::from_start_end(launch.timing->ticks->start(),
                                                           launch.timing->ticks->end() + 5us);
      launch.timing->length = launch.timing->ticks->length();
    }
  }
  std::erase_if(current.launches, [&](const launch_record& l) {
    return current.kernels[l.kernel] == testing::fill;
  });
  auto rope = current.launches.back();
  rope.kernel = current.add_kernel("demo::ops::rope<float>");
  rope.scope = current.add_scope_path({"model", "layer 1", "attention"});
  rope.dry_run = false;
  rope.timing = launch_timing{10us, timing_method::device,
                              profile_ticks::from_start_end(testing::at(570us), testing::at(580us))};
  current.launches.push_back(rope);
  return diff_summaries(summarize(testing::sample_pass()), summarize(current));
}

std::string table(const summary_diff& diff, diff_options options = {}) {
  std::ostringstream out;
  write_diff(out, diff, options);
  return out.str();
}

TEST(SummaryDiff, GivesEachRowItsBaseAndNewLaunchesAndTime) {
  const auto diff = diff_summaries(model(2, 10us), model(3, 12us));
  const auto& a = row_named(diff, "a");
  EXPECT_EQ(a.depth, 1u);
  EXPECT_EQ(a.base, (diff_side{2, 20us, true}));
  EXPECT_EQ(a.current, (diff_side{3, 36us, true}));
  EXPECT_EQ(row_named(diff, "model").depth, 0u);
  EXPECT_EQ(diff.total.base->launches, 2u);
  EXPECT_EQ(diff.total.current->time, 36us);
}

TEST(SummaryDiff, ShowsGrowthAsAPositiveChange) {
  EXPECT_THAT(table(diff_summaries(model(2, 10us), model(3, 12us))),
              ContainsRegex("\n  a +2 +3 +\\+1 +20\\.0 us +36\\.0 us +\\+16\\.0 us +\\+80\\.0%\n"));
}

TEST(SummaryDiff, ShowsShrinkageAsANegativeChange) {
  EXPECT_THAT(table(diff_summaries(model(4, 10us), model(2, 10us))),
              ContainsRegex("\n  a +4 +2 +-2 +40\\.0 us +20\\.0 us +-20\\.0 us +-50\\.0%\n"));
}

TEST(SummaryDiff, MarksARowOnlyInTheNewSummaryAsNew) {
  const auto diff = diff_summaries(model(2, 10us), model(2, 10us, true));
  const auto& b = row_named(diff, "b");
  EXPECT_FALSE(b.base);
  EXPECT_EQ(b.current, (diff_side{1, 5us, true}));
  EXPECT_THAT(table(diff), ContainsRegex("\n  b +- +1 +\\+1 +- +5\\.00 us +\\+5\\.00 us +new\n"));
}

TEST(SummaryDiff, MarksARowOnlyInTheBaseAsGone) {
  const auto diff = diff_summaries(model(2, 10us, true), model(2, 10us));
  const auto& b = row_named(diff, "b");
  EXPECT_EQ(b.base, (diff_side{1, 5us, true}));
  EXPECT_FALSE(b.current);
  EXPECT_THAT(table(diff), ContainsRegex("\n  b +1 +- +-1 +5\\.00 us +- +-5\\.00 us +gone\n"));
}

TEST(SummaryDiff, MatchesRowsByTheirPathNotTheirPosition) {
  // The same kernel under two scopes, and the scopes in the other order in the new summary.
  pass_builder first;
  const auto t1 = first.thread("t");
  first.kernel({t1, "k", {"x"}, first.stream(1), 0us, 0us}, 0us, 1us);
  first.kernel({t1, "k", {"y"}, first.stream(1), 2us, 2us}, 2us, 4us);
  pass_builder second;
  const auto t2 = second.thread("t");
  second.kernel({t2, "k", {"y"}, second.stream(1), 0us, 0us}, 0us, 2us);
  second.kernel({t2, "k", {"x"}, second.stream(1), 2us, 2us}, 2us, 3us);
  const auto diff = diff_summaries(summarize(first.pass()), summarize(second.pass()));
  ASSERT_EQ(diff.rows.size(), 4u);
  for (const auto& row : diff.rows) {
    ASSERT_TRUE(row.base && row.current) << row.name;
    EXPECT_EQ(row.base->time, row.current->time) << row.name;
  }
}

TEST(SummaryDiff, ARowGrewPastTheThresholdOnlyWhenItGrewByMore) {
  const auto diff = diff_summaries(model(10, 10us), model(10, 11us));  // +10% time
  EXPECT_TRUE(grew_past(row_named(diff, "a"), 9.9));
  EXPECT_FALSE(grew_past(row_named(diff, "a"), 10.0)) << "exactly at the threshold is not past it";
  EXPECT_TRUE(grew_past(diff.total, 5));
}

TEST(SummaryDiff, MoreLaunchesGrowPastTheThresholdToo) {
  const auto diff = diff_summaries(model(10, 10us, false, timing_request::none),
                                   model(12, 10us, false, timing_request::none));
  EXPECT_TRUE(grew_past(row_named(diff, "a"), 19.9));
  EXPECT_FALSE(grew_past(row_named(diff, "a"), 20.0));
}

TEST(SummaryDiff, ANewRowGrewPastAnyThresholdAndAVanishedOneNever) {
  EXPECT_TRUE(grew_past(row_named(diff_summaries(model(1, 1us), model(1, 1us, true)), "b"), 1e9));
  EXPECT_FALSE(grew_past(row_named(diff_summaries(model(1, 1us, true), model(1, 1us)), "b"), 0));
}

TEST(SummaryDiff, ShrinkageNeverGrowsPastTheThreshold) {
  const auto diff = diff_summaries(model(4, 10us), model(2, 5us));
  for (const auto& row : diff.rows) EXPECT_FALSE(grew_past(row, 0)) << row.name;
  EXPECT_FALSE(grew_past(diff.total, 0));
}

TEST(SummaryDiff, SaysHowManyRowsGrewPastTheThreshold) {
  diff_options options;
  options.fail_above = 5;
  const auto text = table(diff_summaries(model(2, 10us), model(2, 10us, true)), options);
  EXPECT_THAT(text, ContainsRegex("\n  b [^\n]*new  grew past 5%\n"));
  EXPECT_THAT(text, HasSubstr("\n3 rows grew past 5% (in launches or device time; new rows always count)\n"));
}

TEST(SummaryDiff, AGateOnCountsIgnoresTimeThatGrew) {
  const auto diff = diff_summaries(model(10, 10us), model(10, 20us));  // +100% time, same launches
  EXPECT_FALSE(grew_past(row_named(diff, "a"), 0, growth_gate::count));
  EXPECT_TRUE(grew_past(row_named(diff, "a"), 0, growth_gate::any));
}

TEST(SummaryDiff, AGateOnCountsFailsWhenLaunchesGrew) {
  const auto diff = diff_summaries(model(10, 10us), model(11, 10us));
  EXPECT_TRUE(grew_past(row_named(diff, "a"), 5, growth_gate::count));
}

TEST(SummaryDiff, AGateOnTimeIgnoresLaunchesThatGrew) {
  const auto diff = diff_summaries(model(10, 10us, false, timing_request::none),
                                   model(12, 10us, false, timing_request::none));
  EXPECT_FALSE(grew_past(row_named(diff, "a"), 0, growth_gate::time));
}

TEST(SummaryDiff, SaysWhatTheGateLookedAt) {
  diff_options options;
  options.fail_above = 0;
  options.fail_on = growth_gate::count;
  EXPECT_THAT(table(diff_summaries(model(2, 10us), model(2, 20us)), options),
              HasSubstr("\nno row grew past 0% (in launches; new rows always count)\n"));
  EXPECT_FALSE(any_grew_past(diff_summaries(model(2, 10us), model(2, 20us)), options));
}

TEST(SummaryDiffCsv, GivesBothSidesOfEachRowAndTheTotalLast) {
  diff_options options;
  options.format = report_format::csv;
  options.fail_above = 10;
  const auto records = testing::read_csv(table(diff_summaries(model(2, 10us), model(2, 10us, true)), options));
  ASSERT_EQ(records.size(), 5u);  // header, model, a, b, total
  EXPECT_THAT(records[0], ::testing::ElementsAre("path", "kind", "base_launches", "new_launches", "base_ns",
                                                 "new_ns", "grew"));
  EXPECT_THAT(records[2], ::testing::ElementsAre("model/a", "kernel", "2", "2", "20000", "20000", "0"));
  EXPECT_THAT(records[3], ::testing::ElementsAre("model/b", "kernel", "", "1", "", "5000", "1"));
  EXPECT_THAT(records[4], ::testing::ElementsAre("total", "total", "2", "3", "20000", "25000", "1"));
}

TEST(SummaryDiffJson, GivesBothSidesOfEachRow) {
  diff_options options;
  options.format = report_format::json;
  const auto j = nlohmann::json::parse(table(diff_summaries(model(2, 10us), model(2, 10us, true)), options));
  EXPECT_EQ(j["format"], "launchwatch-diff");
  const auto& b = j["rows"][2];
  EXPECT_EQ(b["path"], nlohmann::json::array({"model", "b"}));
  EXPECT_TRUE(b["base"].is_null());
  EXPECT_EQ(b["new"]["launches"], 1);
  EXPECT_EQ(b["new"]["total_ns"], 5000);
}

TEST(SummaryDiff, MatchesTheGoldenFile) {
  diff_options options;
  options.fail_above = 10;
  testing::expect_matches_golden("diff.txt", table(sample_diff(), options));
}

// --- the writers: one golden file per format ---

TEST(DiffTableWriter, MatchesTheGoldenFile) {
  diff_options options;
  options.fail_above = 10;
  diff_table_writer writer{options};
  testing::expect_matches_golden("diff.txt", testing::written_by(writer, sample_diff()));
}

TEST(DiffCsvWriter, MatchesTheGoldenFile) {
  diff_options options;
  options.fail_above = 10;
  diff_csv_writer writer{options};
  testing::expect_matches_golden("diff.csv", testing::written_by(writer, sample_diff()));
}

TEST(DiffJsonWriter, MatchesTheGoldenFile) {
  diff_options options;
  options.fail_above = 10;
  diff_json_writer writer{options};
  testing::expect_matches_golden("diff.json", testing::written_by(writer, sample_diff()));
}

}  // namespace
}  // namespace launchwatch
