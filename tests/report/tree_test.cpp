// The tree report against golden files, and the properties its output must keep: the table
// adds up to its total, shares add up to their parent's; as a table, CSV and JSON.

#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/tree.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/csv_reader.hpp"
#include "support/golden.hpp"
#include "sample_passes.hpp"
#include "written_by.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using testing::lines_of;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::expect_matches_golden;

TEST(TreeReport, MatchesTheGoldenFile) {
  expect_matches_golden("tree.txt", render_tree(summarize(testing::sample_pass())));
}

TEST(TreeReport, GivesEachRowItsMethodWhenMethodsAreMixed) {
  expect_matches_golden("tree_mixed.txt", render_tree(summarize(testing::mixed_pass())));
}

TEST(TreeReport, ShowsCountsOnlyForAnUntimedPass) {
  expect_matches_golden("tree_untimed.txt", render_tree(summarize(testing::untimed_pass())));
}

TEST(TreeReport, ShortensKernelNamesAsAsked) {
  tree_options options;
  options.kernel_names = name_format::full;
  const auto table = render_tree(summarize(testing::sample_pass()), options);
  EXPECT_THAT(table, HasSubstr(std::string{testing::matmul}));
  EXPECT_THAT(render_tree(summarize(testing::sample_pass())),
              Not(HasSubstr(std::string{testing::matmul})));
}

TEST(TreeReport, SubtractsOverlapInARowOfItsOwn) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  b.kernel({t, "a", {"s"}, s1}, 0us, 10us);
  b.kernel({t, "b", {"s"}, s1}, 6us, 12us);
  const auto table = render_tree(summarize(b.pass()));
  // 16us of kernels in a 12us window: the overlap row takes the 4us counted twice back out.
  EXPECT_THAT(table, ContainsRegex("\n\\[overlap, counted twice above\\] +-4\\.00 us +-33\\.3%\n"));
  EXPECT_THAT(table, ContainsRegex("\ns +2 +16\\.0 us +16\\.0 us +133\\.3%\n"));
  EXPECT_THAT(table, ContainsRegex("\ntotal +2 +12\\.0 us +100\\.0%\n"));
}

TEST(TreeReport, SaysWhatMeasurementsWereLost) {
  auto pass = testing::sample_pass();
  pass.lost = lost_measurements{1, 2, 3};
  EXPECT_THAT(render_tree(summarize(pass)),
              HasSubstr("lost: 6 measurements (empty 1, failed to read 2, unpaired 3); their "
                        "launches have no time"));
}

TEST(TreeReport, CountsDryRunsAsDryRunsNotAsUntimed) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  b.kernel({t, "k", {"s"}, s1}, 0us, 10us).dry_run = true;
  b.kernel({t, "k", {"s"}, s1}, 20us, 45us);
  b.launch({t, "k", {"s"}, s1});  // measured by nothing
  const auto table = render_tree(summarize(b.pass()));
  EXPECT_THAT(table, ContainsRegex("\ns +3 \\(1 dry, 1 untimed\\) +25\\.0 us"));
  EXPECT_THAT(table, ContainsRegex("\n  k +3 \\(1 dry, 1 untimed\\) +25\\.0 us"));
}

TEST(TreeReport, CountsDryRunsInAPassThatIsNotTimed) {
  testing::pass_builder b{timing_request::none};
  const auto t = b.thread("t");
  b.launch({t, "k", {"s"}, b.stream(1)}).dry_run = true;
  b.launch({t, "k", {"s"}, b.stream(1)});
  EXPECT_THAT(render_tree(summarize(b.pass())), ContainsRegex("\ns +2 \\(1 dry\\)\n"));
}

TEST(TreeReport, SaysTheWindowIsTheTimelinePlusTheKernelsKnownOnlyByLength) {
  // The mixed pass: 43us from first start to last end, and 8us known only by length.
  EXPECT_THAT(render_tree(summarize(testing::mixed_pass())),
              HasSubstr("\n100% = 51.0 us: 43.0 us from first kernel start to last kernel end "
                        "on each device, its streams' kernels united, summed over 1 device, and "
                        "8.00 us of kernels known only by length (idle time around them is "
                        "unknown)\n"));
}

TEST(TreeReport, SaysTheHundredPercentIsPerStreamWhenAskedForThatView) {
  tree_options options;
  options.accounting = idle_accounting::stream;
  const auto table = render_tree(summarize(testing::sample_pass()), options);
  EXPECT_THAT(table, HasSubstr("\n100% = 1.02 ms: first kernel start to last kernel end on "
                               "each stream, summed over 2 streams\n"));
  EXPECT_THAT(table, ContainsRegex("\n\\[stream idle\\] +560 us +54\\.9%\n"));
  EXPECT_THAT(table, ContainsRegex("\ntotal +13 \\(1 dry\\) +1\\.02 ms +100\\.0%\n"));
  EXPECT_THAT(table, Not(HasSubstr("[device idle]")));
}

TEST(TreeReport, CountsKernelsRunningAtOnceOnTwoStreamsAsOverlapNotIdle) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  b.kernel({t, "a", {"s"}, b.stream(1)}, 0us, 10us);
  b.kernel({t, "b", {"s"}, b.stream(2)}, 0us, 10us);
  const auto table = render_tree(summarize(b.pass()));
  EXPECT_THAT(table, ContainsRegex("\n\\[device idle\\] +0 ns +0\\.0%\n"));
  EXPECT_THAT(table, ContainsRegex("\n\\[overlap, counted twice above\\] +-10\\.0 us +-100\\.0%\n"));
  EXPECT_THAT(table, ContainsRegex("\ntotal +2 +10\\.0 us +100\\.0%\n"));
}

TEST(TreeReport, ShowsEachDeviceBesideItsStreams) {
  EXPECT_THAT(render_tree(summarize(testing::sample_pass())),
              HasSubstr("device / stream  launches  window  kernels     idle  overlap\n"
                        "cpu device 0           13  990 us   460 us   560 us  30.0 us\n"
                        "  stream 1             10  900 us   410 us   490 us     0 ns\n"
                        "  stream 2              3  120 us  50.0 us  70.0 us     0 ns\n"));
}

TEST(TreeReport, ScopesPrintInTheOrderTheyWereFirstIssued) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  for (int layer = 0; layer < 4; ++layer) {
    const auto name = "layer " + std::to_string(layer);
    const auto start = std::chrono::microseconds{100 * layer};
    // layer 2 is the hottest: it still prints third.
    b.kernel({t, "k", {"model", name}, s1, start, start}, start,
             start + std::chrono::microseconds{layer == 2 ? 60 : 20});
  }
  const auto table = render_tree(summarize(b.pass()));
  EXPECT_THAT(table, ContainsRegex("\n  layer 0 [^\n]*\n    k [^\n]*\n  layer 1 [^\n]*\n    k "
                                   "[^\n]*\n  layer 2 [^\n]*\n    k [^\n]*\n  layer 3 "));
}

TEST(TreeReport, SortedByTimeMatchesTheGoldenFile) {
  tree_options options;
  options.order = tree_order::time;
  expect_matches_golden("tree_by_time.txt", render_tree(summarize(testing::sample_pass()), options));
}

TEST(TreeReport, SaysTheWindowIsTheLengthsWhenNoKernelHasAPlaceOnTheTimeline) {
  testing::pass_builder b{timing_request::resolved};
  const auto t = b.thread("t");
  b.timed({t, "a", {"s"}, b.stream(1)}, 30us, timing_method::device);
  b.timed({t, "b", {"s"}, b.stream(1)}, 50us, timing_method::device);
  EXPECT_THAT(render_tree(summarize(b.pass())),
              HasSubstr("\n100% = 80.0 us: the lengths of 2 kernels, summed over 1 device; they "
                        "have no place on a timeline, so idle time around them is unknown\n"));
}

TEST(TreeReport, ShowsIdleTimeAsUnknownNotZeroWhenNoKernelHasAPlaceOnTheTimeline) {
  testing::pass_builder b{timing_request::resolved};
  const auto t = b.thread("t");
  b.timed({t, "a", {"s"}, b.stream(1)}, 30us, timing_method::device);
  const auto table = render_tree(summarize(b.pass()));
  EXPECT_THAT(table, HasSubstr("\n[device idle: unknown, lengths only]"));
  EXPECT_THAT(table, Not(HasSubstr("\n[device idle] ")));
}

TEST(TreeReport, ShowsIdleTimeWhenKernelsHaveAPlaceOnTheTimeline) {
  EXPECT_THAT(render_tree(summarize(testing::mixed_pass())), HasSubstr("\n[device idle] "));
}

/// A pass that asked for deferred timing and got device lengths only: what the launch path
/// reports while the profiling logger reads every measurement.
pass_record deferred_pass_read_by_the_logger() {
  testing::pass_builder b{timing_request::deferred};
  const auto t = b.thread("t");
  b.timed({t, "a", {"s"}, b.stream(1)}, 3us, timing_method::device);
  b.timed({t, "b", {"s"}, b.stream(1)}, 5us, timing_method::device);
  return b.pass();
}

TEST(TreeReport, SaysLengthsOnlyWhenTheProfilingLoggerReadTheMeasurements) {
  const auto table = render_tree(summarize(deferred_pass_read_by_the_logger()));
  EXPECT_THAT(table, HasSubstr("\ntiming: device, lengths only (deferred asked): the profiling "
                               "logger read each measurement, so kernels ran one at a time and "
                               "only their lengths are known\n"));
  EXPECT_THAT(table, Not(HasSubstr("start and end stamped")));
}

TEST(TreeReport, SaysHowManyKernelsWereStampedAndHowManyKnownOnlyByLength) {
  auto pass = deferred_pass_read_by_the_logger();
  testing::pass_builder more{timing_request::deferred};
  const auto t = more.thread("t");
  more.kernel({t, "c", {"s"}, more.stream(1)}, 10us, 20us);
  pass.launches.push_back(more.pass().launches.at(0));
  pass.launches.back().kernel = pass.add_kernel("c");
  EXPECT_THAT(render_tree(summarize(pass)),
              HasSubstr("\ntiming: device (deferred): 1 kernel with its start and end stamped by "
                        "the device on one clock, 2 known only by length (the profiling logger "
                        "read those, so they ran one at a time)\n"));
}

// Reads the table back: the top-level rows' totals (scopes, outside, idle, overlap) must add up to
// the total row. The sample's times are whole microseconds, printed in microseconds with three
// significant figures, so the printed numbers are exact and the sum can be compared exactly.
TEST(TreeReport, TopLevelRowsAddUpToTheTotalRow) {
  const auto table = render_tree(summarize(testing::sample_pass()));
  const auto lines = lines_of(table);
  const auto heading = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("scope / kernel", 0) == 0;
  });
  ASSERT_NE(heading, lines.end());
  // The total column is right-aligned: each cell ends where the heading's "total" ends.
  const auto end = heading->find("total") + 5;
  std::int64_t sum = 0;
  std::int64_t total = -1;
  int rows = 0;
  for (auto line = heading + 1; line != lines.end() && !line->empty(); ++line) {
    if (line->front() == ' ') continue;  // a nested row
    const auto start = line->rfind("  ", end - 1);
    const auto cell = line->substr(start + 2, end - start - 2);
    ASSERT_THAT(cell, HasSubstr(" us")) << *line;
    const auto thousandths = static_cast<std::int64_t>(std::llround(std::stod(cell) * 1000));
    if (line->rfind("total", 0) == 0) {
      total = thousandths;
    } else {
      sum += thousandths;
      ++rows;
    }
  }
  EXPECT_EQ(rows, 5);  // loader, model, outside any scope, device idle, overlap
  EXPECT_EQ(total, 990000);
  EXPECT_EQ(sum, total);
}

/// The share cells of a tree's main table, by row, with each row's depth; none for "-".
struct share_cell {
  std::size_t depth;
  std::optional<std::int64_t> tenths;
  bool total;
};
std::vector<share_cell> share_cells(const std::string& table) {
  const auto lines = lines_of(table);
  auto line = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("scope / kernel", 0) == 0;
  });
  std::vector<share_cell> cells;
  if (line == lines.end()) return cells;
  // The share column is right-aligned: each cell ends where the heading's "share" ends.
  const auto end = line->find("share") + 5;
  for (++line; line != lines.end() && !line->empty(); ++line) {
    const auto depth = line->find_first_not_of(' ') / 2;
    const auto start = line->rfind(' ', end - 1) + 1;
    const auto cell = line->substr(start, end - start);
    std::optional<std::int64_t> tenths;
    if (cell != "-") {
      const auto dot = cell.find('.');
      const bool negative = cell.front() == '-';
      const auto whole = std::stoll(cell.substr(negative ? 1 : 0, dot - (negative ? 1 : 0)));
      const auto tenth = std::stoll(cell.substr(dot + 1, 1));
      tenths = (negative ? -1 : 1) * (whole * 10 + tenth);
    }
    cells.push_back({depth, tenths, line->rfind("total", 0) == 0});
  }
  return cells;
}

// Rounding each share on its own can leave the rows at 99.9% or 100.1% of their total; the table's
// shares are apportioned so they never do, for any pass.
TEST(TreeReport, TopLevelSharesAddUpToExactlyTheHundredPercentRow) {
  for (std::uint32_t seed = 1; seed <= 200; ++seed) {
    const auto s = summarize(testing::random_pass(seed));
    if (s.device_window.count() == 0) continue;
    std::int64_t sum = 0;
    for (const auto& cell : share_cells(render_tree(s))) {
      if (cell.total) {
        ASSERT_EQ(cell.tenths, 1000) << "seed " << seed;
      } else if (cell.depth == 0 && cell.tenths) {
        sum += *cell.tenths;
      }
    }
    ASSERT_EQ(sum, 1000) << "seed " << seed << "\n" << render_tree(s);
  }
}

TEST(TreeReport, ChildrenSharesAddUpToTheirParentsShare) {
  for (std::uint32_t seed = 1; seed <= 200; ++seed) {
    const auto cells = share_cells(render_tree(summarize(testing::random_pass(seed))));
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (!cells[i].tenths || cells[i].total) continue;
      std::int64_t children = 0;
      bool any = false;
      for (std::size_t j = i + 1; j < cells.size() && cells[j].depth > cells[i].depth; ++j) {
        if (cells[j].depth == cells[i].depth + 1 && cells[j].tenths) {
          children += *cells[j].tenths;
          any = true;
        }
      }
      if (any) ASSERT_EQ(children, *cells[i].tenths) << "seed " << seed << " row " << i;
    }
  }
}

TEST(TreeReport, WritesASmallRowOfALongWindowInItsOwnUnit) {
  // A 100 s window with a 412 us row: one unit per table would have printed it as 0.000 s.
  testing::pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  b.kernel({t, "short", {"a"}, s1}, 0us, 412us);
  b.kernel({t, "long", {"b"}, s1, 1s, 1s}, 1s, 100s);
  const auto table = render_tree(summarize(b.pass()));
  EXPECT_THAT(table, ContainsRegex("\n  short +1 +412 us +412 us +0\\.0%\n"));
  EXPECT_THAT(table, ContainsRegex("\n  long +1 +99\\.0 s +99\\.0 s +99\\.0%\n"));
  EXPECT_THAT(table, ContainsRegex("\ntotal +2 +100 s +100\\.0%\n"));
}

TEST(TreeReport, FoldsRowsDeeperThanTheDepthIntoTheirAncestor) {
  tree_options options;
  options.depth = 2;
  const auto table = render_tree(summarize(testing::sample_pass()), options);
  // layer 0 keeps its whole total; its attention, mlp and kernels are not shown.
  EXPECT_THAT(table, ContainsRegex("\n  layer 0 +7 +10\\.0 us +290 us +29\\.3%\n  layer 1 "));
  EXPECT_THAT(table, Not(HasSubstr("attention")));
  EXPECT_THAT(table, ContainsRegex("\ntotal +13 \\(1 dry\\) +990 us +100\\.0%\n"));
}

TEST(TreeReport, ShowsOnlyTheTopLevelRowsAtDepthOne) {
  tree_options options;
  options.depth = 1;
  const auto rows = build_tree_rows(summarize(testing::sample_pass()), options);
  std::vector<std::string> shown;
  for (const auto& row : rows) shown.push_back(row.path.back());
  EXPECT_THAT(shown, ::testing::ElementsAre("loader", "model", "[outside any scope]", "[device idle]",
                                            "[overlap, counted twice above]"));
  EXPECT_TRUE(rows[1].folded);
  EXPECT_EQ(rows[1].total, 370us);
}

TEST(TreeReport, SortedByTimeSortsEveryLevel) {
  tree_options options;
  options.order = tree_order::time;
  for (std::uint32_t seed = 1; seed <= 100; ++seed) {
    const auto rows = build_tree_rows(summarize(testing::random_pass(seed)), options);
    // Among the rows under one parent (the same path but for the last name), totals never grow.
    // The top level's scopes are sorted among themselves; `[outside any scope]`, idle and overlap
    // follow them in their fixed places.
    auto sorted_among_siblings = [](const tree_row& row) {
      return row.path.size() > 1 ||
             (row.kind == tree_row::row_kind::scope && row.path.front() != "[outside any scope]");
    };
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!sorted_among_siblings(rows[i])) continue;
      for (std::size_t j = i + 1; j < rows.size() && rows[j].path.size() >= rows[i].path.size(); ++j) {
        if (rows[j].path.size() != rows[i].path.size() || !sorted_among_siblings(rows[j])) continue;
        ASSERT_GE(rows[i].total, rows[j].total) << "seed " << seed << ": " << rows[i].path.back()
                                                << " before " << rows[j].path.back();
      }
    }
  }
}

std::string tree_as(const pass_summary& summary, report_format format) {
  tree_options options;
  options.format = format;
  return render_tree(summary, options);
}

TEST(TreeCsv, GivesARowPerNodeWithItsPathKindAndTimes) {
  const auto records = testing::read_csv(tree_as(summarize(testing::sample_pass()), report_format::csv));
  ASSERT_FALSE(records.empty());
  EXPECT_THAT(records[0], ::testing::ElementsAre("path", "kind", "launches", "self_ns", "total_ns", "share"));
  const auto matmul = std::string{"model/layer 0/attention/"} + std::string{testing::matmul};
  const auto found = std::find_if(records.begin(), records.end(),
                                  [&](const std::vector<std::string>& r) { return r[0] == matmul; });
  ASSERT_NE(found, records.end());
  EXPECT_THAT(*found, ::testing::ElementsAre(matmul, "kernel", "2", "120000", "120000",
                                             fmt::format("{}", 120.0 / 990.0)));
  // Every row of build_tree_rows, after the header.
  EXPECT_EQ(records.size(), build_tree_rows(summarize(testing::sample_pass())).size() + 1);
}

TEST(TreeCsv, TopLevelRowsAddUpToTheWindow) {
  const auto records = testing::read_csv(tree_as(summarize(testing::sample_pass()), report_format::csv));
  std::int64_t sum = 0;
  for (std::size_t i = 1; i < records.size(); ++i) {
    if (records[i][0].find('/') == std::string::npos) sum += std::stoll(records[i][4]);
  }
  EXPECT_EQ(sum, 990'000);
}

TEST(TreeJson, HoldsTheSameRowsWithPathsAsLists) {
  const auto j = nlohmann::json::parse(tree_as(summarize(testing::sample_pass()), report_format::json));
  EXPECT_EQ(j["format"], "launchwatch-tree");
  EXPECT_EQ(j["window_ns"], 990'000);
  const auto& rows = j["rows"];
  ASSERT_EQ(rows.size(), build_tree_rows(summarize(testing::sample_pass())).size());
  EXPECT_EQ(rows[0]["path"], nlohmann::json::array({"loader"}));
  EXPECT_EQ(rows[0]["total_ns"], 50'000);
  EXPECT_DOUBLE_EQ(rows[0]["share"].get<double>(), 50.0 / 990.0);
  // The dry-run matmul outside any scope has no time.
  const auto dry = std::find_if(rows.begin(), rows.end(), [](const nlohmann::json& r) {
    return r["path"] == nlohmann::json::array({"[outside any scope]", std::string{testing::matmul}});
  });
  ASSERT_NE(dry, rows.end());
  EXPECT_TRUE((*dry)["total_ns"].is_null());
  EXPECT_EQ((*dry)["dry_run_launches"], 1);
}

TEST(TreeReport, SaysHowManyLaunchesHaveNoTimeWhenSomeAreTimed) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  b.kernel({t, "k", {"s"}, b.stream(1)}, 0us, 10us);
  b.launch({t, "k", {"s"}, b.stream(1)});  // measured by nothing
  EXPECT_THAT(render_tree(summarize(b.pass())),
              HasSubstr("\nuntimed: 1 of 2 launches have no time; the times below are of the other 1\n"));
}

// --- the writers: one golden file per format ---

TEST(TreeTableWriter, MatchesTheGoldenFile) {
  tree_table_writer writer;
  expect_matches_golden("tree.txt", testing::written_by(writer, summarize(testing::sample_pass())));
}

TEST(TreeCsvWriter, MatchesTheGoldenFile) {
  tree_csv_writer writer;
  expect_matches_golden("tree.csv", testing::written_by(writer, summarize(testing::sample_pass())));
}

TEST(TreeJsonWriter, MatchesTheGoldenFile) {
  tree_json_writer writer;
  expect_matches_golden("tree.json", testing::written_by(writer, summarize(testing::sample_pass())));
}

}  // namespace
}  // namespace launchwatch
