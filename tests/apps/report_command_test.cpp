// `launchwatch report` end to end: summaries built by hand with exact times are written to files,
// and the program's output and exit status are checked (standard input, the kernel table's CSV,
// the CI gate's thresholds, merging).

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/summary_json.hpp>

#include "sample_passes.hpp"
#include "support/csv_reader.hpp"

namespace launchwatch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::string read_file(const fs::path& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, {}};
}

/// A pass of one scope `model` with `launches` launches of kernel `a`, each `length` long.
pass_summary model(int launches, std::chrono::nanoseconds length, std::string process = "") {
  testing::pass_builder b;
  const auto t = b.thread("t");
  const auto s = b.stream(1);
  std::chrono::nanoseconds at{0};
  for (int i = 0; i < launches; ++i) {
    b.kernel({t, "a", {"model"}, s, at, at}, at, at + length);
    at += length + 1us;
  }
  auto summary = summarize(b.pass());
  summary.process = std::move(process);
  return summary;
}

/// `launchwatch report ...` in a scratch folder, its output captured.
class ReportCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    folder_ = fs::temp_directory_path() /
              (std::string{"launchwatch-report-test-"} + test->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  /// Writes `summary` as `name` in the scratch folder; returns its path.
  std::string write(const std::string& name, const pass_summary& summary) {
    const auto path = folder_ / name;
    std::ofstream out{path};
    write_summary_json(out, summary);
    return path.string();
  }

  /// Runs `launchwatch report` with `arguments` (a shell's words, quoted by the caller where
  /// needed) and `input` on standard input; returns its exit status.
  int report(const std::string& arguments, const std::string& input = "/dev/null") {
    const auto command = "'" + std::string{LAUNCHWATCH_PROGRAM} + "' report " + arguments + " < '" + input +
                         "' > '" + (folder_ / "stdout").string() + "' 2> '" + (folder_ / "stderr").string() + "'";
    const int status = std::system(command.c_str());
    out_ = read_file(folder_ / "stdout");
    err_ = read_file(folder_ / "stderr");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  fs::path folder_;
  std::string out_;
  std::string err_;
};

TEST_F(ReportCommand, ReadsTheSummaryFromStandardInputForADash) {
  const auto file = write("summary.json", model(3, 10us));
  ASSERT_EQ(report("-", file), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("\nmodel "));
  EXPECT_THAT(out_, HasSubstr("launchwatch: 3 launches"));
}

TEST_F(ReportCommand, SaysWhenAFileIsMissingAndExitsOne) {
  EXPECT_EQ(report("'" + (folder_ / "no-such.json").string() + "'"), 1);
  EXPECT_THAT(err_, HasSubstr("no-such.json: No such file or directory"));
  EXPECT_THAT(out_, IsEmpty());
}

TEST_F(ReportCommand, WritesTheKernelTableAsCsvWithItsFixedHeader) {
  const auto file = write("summary.json", model(4, 10us));
  ASSERT_EQ(report("--kernels --format csv " + file), 0) << err_;
  const auto records = testing::read_csv(out_);
  ASSERT_EQ(records.size(), 2u) << out_;
  EXPECT_THAT(records[0], ElementsAre("kernel", "count", "total_ns", "avg_ns", "min_ns", "max_ns", "share"));
  EXPECT_THAT(records[1], ElementsAre("a", "4", "40000", "10000", "10000", "10000", "1"));
}

TEST_F(ReportCommand, WritesTheTreeAsJson) {
  const auto file = write("summary.json", model(2, 10us));
  ASSERT_EQ(report("--format json " + file), 0) << err_;
  const auto j = nlohmann::json::parse(out_);
  EXPECT_EQ(j["format"], "launchwatch-tree");
  EXPECT_EQ(j["rows"][0]["path"], nlohmann::json::array({"model"}));
  EXPECT_EQ(j["rows"][0]["total_ns"], 20'000);
}

TEST_F(ReportCommand, RefusesAThresholdThatIsNotANumber) {
  const auto a = write("a.json", model(2, 10us));
  for (const char* bad : {"nan", "-1", "abc", "inf"}) {
    EXPECT_NE(report("--diff " + a + " " + a + " --fail-above " + bad), 0) << bad;
    EXPECT_THAT(err_, HasSubstr("--fail-above")) << bad;
    EXPECT_THAT(err_, HasSubstr(bad)) << bad;
    EXPECT_THAT(out_, IsEmpty()) << bad;
  }
}

TEST_F(ReportCommand, FailOnCountPassesWhenOnlyTimesGrew) {
  const auto base = write("base.json", model(3, 10us));
  const auto slower = write("slower.json", model(3, 30us));
  EXPECT_EQ(report("--diff " + base + " " + slower + " --fail-above 10 --fail-on count"), 0) << out_ << err_;
  EXPECT_EQ(report("--diff " + base + " " + slower + " --fail-above 10"), 4) << "the default gate looks at time";
}

TEST_F(ReportCommand, FailOnCountFailsWhenCountsGrew) {
  const auto base = write("base.json", model(3, 10us));
  const auto more = write("more.json", model(4, 10us));
  EXPECT_EQ(report("--diff " + base + " " + more + " --fail-on count"), 4) << out_ << err_;
  EXPECT_THAT(out_, HasSubstr("grew past 0% (in launches; new rows always count)"));
}

TEST_F(ReportCommand, MergeRefusesTheSameFileGivenTwice) {
  const auto file = write("rank0.json", model(2, 10us, "rank 0"));
  const auto other_spelling = (folder_ / "." / "rank0.json").string();
  EXPECT_EQ(report("--merge " + file + " " + other_spelling), 1);
  EXPECT_THAT(err_, HasSubstr("are the same file"));
  EXPECT_THAT(out_, IsEmpty()) << "nothing is printed before the error";
}

TEST_F(ReportCommand, MergeLabelsAnUnlabelledFileByItsPathNotARankItMightCollideWith) {
  const auto unlabelled = write("unlabelled.json", model(2, 10us));
  const auto rank1 = write("rank1.json", model(3, 10us, "rank 1"));
  // Placed second, a file labelled by its place would have been `rank 1`.
  ASSERT_EQ(report("--merge " + rank1 + " " + unlabelled), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("\nrank 1 "));
  EXPECT_THAT(out_, HasSubstr("\n" + unlabelled + " "));
}

TEST_F(ReportCommand, MergePrintsNothingBeforeAnError) {
  const auto good = write("good.json", model(2, 10us, "rank 0"));
  const auto bad = (folder_ / "bad.json").string();
  std::ofstream{bad} << "{}";
  EXPECT_EQ(report("--merge " + good + " " + bad), 1);
  EXPECT_THAT(out_, IsEmpty());
  EXPECT_THAT(err_, HasSubstr("bad.json"));
}

TEST_F(ReportCommand, MergeOfTimedAndUntimedProcessesSaysWhichLaunchesHaveNoTime) {
  testing::pass_builder untimed{timing_request::none};
  const auto t = untimed.thread("t");
  untimed.launch({t, "a", {"model"}, untimed.stream(1)});
  auto counted = summarize(untimed.pass());
  counted.process = "rank 1";
  const auto timed = write("timed.json", model(2, 10us, "rank 0"));
  const auto counts = write("counts.json", counted);
  ASSERT_EQ(report("--merge " + timed + " " + counts), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("\nuntimed: 1 of 3 launches have no time"));
  EXPECT_THAT(out_, ::testing::ContainsRegex("\ntotal +3 \\(1 untimed\\)"));
}

}  // namespace
}  // namespace launchwatch
