// The writer interface: every format is a report_writer, named, with its file, picked by the
// format asked for; a format of a program's own is one class; the free functions write what their
// format's writer writes.

#include <launchwatch/report/chrome_trace.hpp>
#include <launchwatch/report/diff.hpp>
#include <launchwatch/report/folded.hpp>
#include <launchwatch/report/kernel_table.hpp>
#include <launchwatch/report/report_writer.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/summary_json.hpp>
#include <launchwatch/report/tree.hpp>

#include <memory>
#include <ostream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sample_passes.hpp"
#include "written_by.hpp"

namespace launchwatch {
namespace {

/// A format of the test's own: one line with the pass's launch count.
class launch_count_writer final : public report_writer<pass_summary> {
 public:
  launch_count_writer() : report_writer{"launch-count", "launches.txt"} {}

 protected:
  void do_write(std::ostream& out, const pass_summary& summary) override {
    out << "launches " << summary.launches << '\n';
  }
};

TEST(ReportWriter, WritesThroughTheFormatsOwnDoWrite) {
  launch_count_writer own;
  report_writer<pass_summary>& writer = own;
  EXPECT_EQ(testing::written_by(writer, summarize(testing::sample_pass())), "launches 13\n");
  EXPECT_EQ(writer.name(), "launch-count");
  EXPECT_EQ(writer.file_name(), "launches.txt");
}

TEST(ReportWriter, EachFormatHasItsNameAndItsFile) {
  tree_table_writer tree;
  tree_csv_writer tree_csv;
  tree_json_writer tree_json;
  kernels_table_writer kernels;
  kernels_csv_writer kernels_csv;
  kernels_json_writer kernels_json;
  diff_table_writer diff;
  diff_csv_writer diff_csv;
  diff_json_writer diff_json;
  folded_writer folded;
  chrome_trace_writer trace;
  summary_json_writer summary;
  const auto named = [](const auto& writer) {
    return std::string{writer.name()} + " " + std::string{writer.file_name()};
  };
  EXPECT_EQ(named(tree), "tree tree.txt");
  EXPECT_EQ(named(tree_csv), "tree-csv tree.csv");
  EXPECT_EQ(named(tree_json), "tree-json tree.json");
  EXPECT_EQ(named(kernels), "kernels kernels.txt");
  EXPECT_EQ(named(kernels_csv), "kernels-csv kernels.csv");
  EXPECT_EQ(named(kernels_json), "kernels-json kernels.json");
  EXPECT_EQ(named(diff), "diff diff.txt");
  EXPECT_EQ(named(diff_csv), "diff-csv diff.csv");
  EXPECT_EQ(named(diff_json), "diff-json diff.json");
  EXPECT_EQ(named(folded), "folded flame.folded");
  EXPECT_EQ(named(trace), "chrome-trace trace.json");
  EXPECT_EQ(named(summary), "summary-json summary.json");
}

TEST(ReportWriter, TheWriterOfAReportIsPickedByTheFormatAskedFor) {
  for (const auto& [format, suffix] : {std::pair{report_format::table, ""},
                                       std::pair{report_format::csv, "-csv"},
                                       std::pair{report_format::json, "-json"}}) {
    tree_options tree;
    tree.format = format;
    EXPECT_EQ(make_tree_writer(tree)->name(), std::string{"tree"} + suffix);
    kernel_table_options kernels;
    kernels.format = format;
    EXPECT_EQ(make_kernel_table_writer(kernels)->name(), std::string{"kernels"} + suffix);
    diff_options diff;
    diff.format = format;
    EXPECT_EQ(make_diff_writer(diff)->name(), std::string{"diff"} + suffix);
  }
}

TEST(ReportWriter, TheFreeFunctionsWriteWhatTheirFormatsWriterWrites) {
  const auto summary = summarize(testing::sample_pass());
  tree_options by_time;
  by_time.order = tree_order::time;
  by_time.format = report_format::csv;
  tree_csv_writer tree{by_time};
  std::ostringstream tree_out;
  write_tree(tree_out, summary, by_time);
  EXPECT_EQ(tree_out.str(), testing::written_by(tree, summary));

  kernel_table_options brief;
  brief.kernel_names = name_format::brief;
  kernels_table_writer kernels{brief};
  std::ostringstream kernels_out;
  write_kernel_table(kernels_out, summary, brief);
  EXPECT_EQ(kernels_out.str(), testing::written_by(kernels, summary));

  folded_options no_idle;
  no_idle.include_idle = false;
  folded_writer folded{no_idle};
  std::ostringstream folded_out;
  write_folded(folded_out, summary, no_idle);
  EXPECT_EQ(folded_out.str(), testing::written_by(folded, summary));
}

}  // namespace
}  // namespace launchwatch
