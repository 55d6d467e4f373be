// The report files' writer: a file is replaced only once its new version is whole, never written
// through a link, and a write that fails leaves the earlier version and no temporary file.

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/report/report_files.hpp>
#include <launchwatch/report/summary.hpp>

#include "sample_passes.hpp"
#include "written_by.hpp"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string read_file(const fs::path& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, {}};
}

class ReportFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("launchwatch-report-files-" + std::string{::testing::UnitTest::GetInstance()->current_test_info()->name()} +
               "-" + std::to_string(::getpid()));
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::vector<std::string> names() const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator{folder_}) found.push_back(entry.path().filename());
    return found;
  }

  fs::path folder_;
};

TEST_F(ReportFiles, AWriteWhoseFillFailsKeepsTheEarlierFileAndLeavesNoTemporaryFile) {
  std::ofstream{folder_ / "summary.json"} << "earlier\n";
  const auto why = launchwatch::write_file_replacing(folder_ / "summary.json", [](std::ostream& out) {
    out << "half of the new one";
    throw std::runtime_error{"the writer failed"};
  });
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(read_file(folder_ / "summary.json"), "earlier\n");
  EXPECT_THAT(names(), ::testing::ElementsAre("summary.json"));
}

TEST_F(ReportFiles, AWriteThatSucceedsReplacesTheFileWhole) {
  std::ofstream{folder_ / "summary.json"} << "earlier, and longer than the new one\n";
  EXPECT_EQ(launchwatch::write_file_replacing(folder_ / "summary.json", [](std::ostream& out) { out << "new\n"; }), "");
  EXPECT_EQ(read_file(folder_ / "summary.json"), "new\n");
  EXPECT_THAT(names(), ::testing::ElementsAre("summary.json"));
}

TEST_F(ReportFiles, AReportFileThatIsASymbolicLinkIsReplacedAndWhatItPointedToIsLeftAlone) {
  const auto baseline = folder_ / "baseline.json";
  std::ofstream{baseline} << "the user's baseline\n";
  fs::create_directories(folder_ / "out");
  fs::create_symlink(baseline, folder_ / "out" / "summary.json");
  launchwatch::report_files files{folder_ / "out"};
  launchwatch::testing::pass_builder pass;
  files.write_summary(launchwatch::summarize(pass.pass()));
  EXPECT_EQ(read_file(baseline), "the user's baseline\n");
  EXPECT_FALSE(fs::is_symlink(folder_ / "out" / "summary.json"));
  EXPECT_NO_THROW(launchwatch::load_summary(folder_ / "out" / "summary.json"));
}

TEST_F(ReportFiles, CreatingThemTouchesNoFileAlreadyInTheFolder) {
  std::ofstream{folder_ / "trace.json"} << "earlier\n";
  const launchwatch::report_files files{folder_};
  EXPECT_EQ(read_file(folder_ / "trace.json"), "earlier\n");
  EXPECT_THAT(names(), ::testing::ElementsAre("trace.json"));
}

TEST_F(ReportFiles, AFolderThatCannotBeWrittenIsRefusedWithItsPathAndTheReason) {
  try {
    const launchwatch::report_files files{"/proc"};
    FAIL() << "/proc was taken";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot write into /proc: "));
    EXPECT_THAT(error.what(), HasSubstr("--out"));
  }
}

TEST_F(ReportFiles, TheTemporaryNamesAreRecognisedAsLaunchwatchsOwn) {
  EXPECT_TRUE(launchwatch::is_partial_report_file(".trace.json.1234.launchwatch-partial"));
  EXPECT_FALSE(launchwatch::is_partial_report_file("trace.json"));
  EXPECT_FALSE(launchwatch::is_partial_report_file("notes.launchwatch-partial"));
}

TEST_F(ReportFiles, EachFileIsNamedAndWrittenByItsFormatsWriter) {
  const auto pass = launchwatch::testing::sample_pass();
  const auto summary = launchwatch::summarize(pass);
  launchwatch::report_files{folder_}.write(pass, summary);
  launchwatch::summary_json_writer summary_json;
  launchwatch::folded_writer folded;
  launchwatch::chrome_trace_writer trace;
  EXPECT_THAT(launchwatch::report_files::names,
              ::testing::ElementsAre(summary_json.file_name(), folded.file_name(), trace.file_name()));
  EXPECT_EQ(read_file(folder_ / summary_json.file_name()),
            launchwatch::testing::written_by(summary_json, summary));
  EXPECT_EQ(read_file(folder_ / folded.file_name()), launchwatch::testing::written_by(folded, summary));
  EXPECT_EQ(read_file(folder_ / trace.file_name()), launchwatch::testing::written_by(trace, pass));
}

}  // namespace
