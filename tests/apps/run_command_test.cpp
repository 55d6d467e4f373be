// `launchwatch run` end to end, without a GPU: the program it runs (nvtx_program) opens NVTX ranges,
// which load launchwatch's injection; the tests check what launchwatch passes through (exit status,
// signals) and what the injection leaves behind (the report, one message about what was not
// watched).

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/attribute/summary.hpp>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

std::string read_file(const fs::path& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, {}};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// A `launchwatch run` in its own scratch folder, its output captured.
class RunCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    folder_ = fs::temp_directory_path() / (std::string{"launchwatch-run-test-"} + test->name() + "-" +
                                           std::to_string(::getpid()));
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  /// Starts launchwatch with `arguments` (after the program's own path).
  pid_t start(const std::vector<std::string>& arguments) {
    std::vector<std::string> words{LAUNCHWATCH_PROGRAM};
    words.insert(words.end(), arguments.begin(), arguments.end());
    return spawn(words);
  }

  /// Starts the command `words`, its stdout and stderr going to files in the scratch folder.
  pid_t spawn(std::vector<std::string> words) {
    std::vector<char*> argv;
    for (auto& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, (folder_ / "stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&files, STDERR_FILENO, (folder_ / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&files);
    return pid;
  }

  /// Waits for launchwatch; returns its exit status (-1 when a signal ended it).
  int wait(pid_t pid) {
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    out_ = read_file(folder_ / "stdout");
    err_ = read_file(folder_ / "stderr");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  int run(const std::vector<std::string>& arguments) { return wait(start(arguments)); }

  fs::path report() const { return folder_ / "report"; }

  /// Runs a program that waits for a signal, sends `signal_number` to launchwatch once the program
  /// is ready, and returns launchwatch's exit status.
  int stop_while_running(int signal_number) {
    const auto ready = folder_ / "ready";
    const pid_t launchwatch = start({"run", "--out", report(), "--", NVTX_PROGRAM, "wait", ready.string()});
    for (int i = 0; i < 3000 && !fs::exists(ready); ++i) std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(fs::exists(ready)) << "the program never got going";
    EXPECT_EQ(kill(launchwatch, signal_number), 0);
    return wait(launchwatch);
  }

  fs::path folder_;
  std::string out_;
  std::string err_;
};

TEST_F(RunCommand, PassesTheProgramsExitStatusThrough) {
  EXPECT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "exit", "3"}), 3) << err_;
  EXPECT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "exit", "0"}), 0) << err_;
}

TEST_F(RunCommand, AProgramEndedBySignalNGivesStatus128PlusN) {
  EXPECT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "signal", std::to_string(SIGABRT)}), 128 + SIGABRT)
      << err_;
  EXPECT_THAT(out_ + err_, HasSubstr("was ended by signal 6"));
}

TEST_F(RunCommand, ThePrintedReportAndItsFilesHoldEveryThreadsRanges) {
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "exit", "0"}), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("from 2 host threads"));
  const auto trace = read_file(report() / "trace.json");
  EXPECT_EQ(count(trace, R"("path":"outer/inner")"), 2u) << trace;
  EXPECT_TRUE(fs::exists(report() / "flame.folded"));
  EXPECT_THAT(read_file(report() / "summary.json"), HasSubstr("\"host_threads\": 2"));
}

TEST_F(RunCommand, SaysOnceWhatWasNotWatchedAndWhy) {
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "exit", "0"}), 0) << err_;
  EXPECT_EQ(count(err_, "no CUDA kernel was watched: "), 1u) << err_;
}

TEST_F(RunCommand, AProgramThatLoadsNoInjectionRunsAndIsSaidToBeUnwatched) {
  EXPECT_EQ(run({"run", "--out", report(), "--", "/bin/sh", "-c", "exit 5"}), 5);
  EXPECT_EQ(count(err_, "nothing was watched"), 1u) << err_;
  EXPECT_FALSE(fs::exists(report() / "summary.json"));
}

TEST_F(RunCommand, AProgramThatCannotBeStartedGivesStatus127) {
  EXPECT_EQ(run({"run", "--out", report(), "--", (folder_ / "no-such-program").string()}), 127);
  EXPECT_THAT(err_, HasSubstr("cannot run"));
}

TEST_F(RunCommand, SigintDuringRunStopsTheProgramAndWhatWasCollectedIsStillWritten) {
  EXPECT_EQ(stop_while_running(SIGINT), 128 + SIGINT) << err_;
  EXPECT_THAT(out_, HasSubstr("was ended by signal 2"));
  const auto trace = read_file(report() / "trace.json");
  EXPECT_THAT(trace, HasSubstr(R"("name":"collected")"));
  EXPECT_THAT(trace, Not(HasSubstr(R"("name":"waiting")")));  // still open when it stopped
}

TEST_F(RunCommand, SigtermDuringRunStopsTheProgramAndWhatWasCollectedIsStillWritten) {
  EXPECT_EQ(stop_while_running(SIGTERM), 128 + SIGTERM) << err_;
  EXPECT_THAT(read_file(report() / "trace.json"), HasSubstr(R"("name":"collected")"));
}

TEST_F(RunCommand, TheInjectionsSettingsAreCheckedBeforeAnythingIsWatched) {
  // A program may be run with the injection by hand: a bad setting is said, and it still runs.
  setenv("LAUNCHWATCH_RUN_TIMING", "sometimes", 1);
  setenv("NVTX_INJECTION64_PATH", LAUNCHWATCH_INJECTION, 1);
  const pid_t pid = spawn({NVTX_PROGRAM, "exit", "4"});
  EXPECT_EQ(wait(pid), 4);
  EXPECT_THAT(err_, HasSubstr("LAUNCHWATCH_RUN_TIMING is 'sometimes'; use deferred, resolved or none"));
}

TEST_F(RunCommand, TheInjectionsUnscopedSettingIsCheckedBeforeAnythingIsWatched) {
  setenv("LAUNCHWATCH_RUN_UNSCOPED", "guess", 1);
  setenv("NVTX_INJECTION64_PATH", LAUNCHWATCH_INJECTION, 1);
  const pid_t pid = spawn({NVTX_PROGRAM, "exit", "4"});
  EXPECT_EQ(wait(pid), 4);
  EXPECT_THAT(err_, HasSubstr("LAUNCHWATCH_RUN_UNSCOPED is 'guess'; use sole-scoped-thread or outside"));
}

TEST_F(RunCommand, AProcessTheProgramStartsWritesItsOwnReportBesideTheProgramsAndBothArePrinted) {
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "spawn", "4"}), 4) << err_;
  const auto own = launchwatch::load_summary(report() / "summary.json");  // the program's, not overwritten
  EXPECT_EQ(own.host_threads, 1u);
  EXPECT_EQ(own.process, "");
  std::vector<fs::path> others;
  for (const auto& entry : fs::directory_iterator{report() / "processes"}) others.push_back(entry.path());
  ASSERT_EQ(others.size(), 1u);
  EXPECT_THAT(others[0].filename().string(), ::testing::StartsWith("pid-"));
  const auto child = launchwatch::load_summary(others[0] / "summary.json");
  EXPECT_EQ(child.host_threads, 2u);  // `exit 0` opens its ranges on two threads
  EXPECT_THAT(child.process, ::testing::StartsWith("pid "));
  EXPECT_THAT(out_, HasSubstr("1 process(es) it started left reports of their own"));
}

TEST_F(RunCommand, AChildForkedWithoutExecWritesNothingAndLeavesTheProgramsReportWhole) {
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "fork", "5"}), 5) << err_;
  const auto own = launchwatch::load_summary(report() / "summary.json");
  EXPECT_EQ(own.host_threads, 2u);
  EXPECT_FALSE(fs::exists(report() / "processes"));
  EXPECT_THAT(out_, Not(HasSubstr("left reports of their own")));
}

TEST_F(RunCommand, APreviousRunsProcessReportsAreRemovedFirst) {
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "spawn", "0"}), 0) << err_;
  ASSERT_TRUE(fs::exists(report() / "processes"));
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "exit", "0"}), 0) << err_;
  EXPECT_FALSE(fs::exists(report() / "processes"));
}

TEST_F(RunCommand, ASignalToAChildForkedWithoutExecEndsTheChildNotTheProgram) {
  EXPECT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "forkterm", "6"}), 6) << out_ << err_;
  EXPECT_EQ(launchwatch::load_summary(report() / "summary.json").host_threads, 1u);
}

TEST_F(RunCommand, RanksReportsArePrintedInTheirNumbersOrderEachUnderItsRank) {
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "ranks", "0"}), 0) << err_;
  const auto rank_2 = out_.find("rank 2, pid ");
  const auto rank_10 = out_.find("rank 10, pid ");
  ASSERT_NE(rank_2, std::string::npos) << out_;
  ASSERT_NE(rank_10, std::string::npos) << out_;
  EXPECT_LT(rank_2, rank_10) << "rank 10 ran first, but 2 comes before 10\n" << out_;
  EXPECT_THAT(out_, HasSubstr("2 process(es) it started left reports of their own"));
}

}  // namespace
