// `launchwatch run` end to end, without a GPU: the program it runs (nvtx_program) opens NVTX ranges,
// which load launchwatch's injection; the tests check what launchwatch passes through (exit status,
// signals) and what the injection leaves behind (the report, one message about what was not
// watched).

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
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

  /// The NVTX program run by hand with the injection (as a program may be) and `variable` set to
  /// `value`, its report (if any) going to report(): its exit status, 4 unless the setting stopped
  /// it. The variables are unset after.
  int run_injected_with(const char* variable, const char* value) {
    setenv(variable, value, 1);
    setenv("NVTX_INJECTION64_PATH", LAUNCHWATCH_INJECTION, 1);
    setenv("LAUNCHWATCH_RUN_OUT", report().c_str(), 1);  // never the working directory
    const int status = wait(spawn({NVTX_PROGRAM, "exit", "4"}));
    unsetenv(variable);
    unsetenv("LAUNCHWATCH_RUN_OUT");
    unsetenv("NVTX_INJECTION64_PATH");  // or the next test's programs would load it unasked
    return status;
  }

  /// `launchwatch run --out REPORT FLAGS... -- sh -c 'touch RAN'`: its exit status; whether `ran`
  /// exists says whether the program started.
  int run_touching(const std::vector<std::string>& flags, const fs::path& ran) {
    std::vector<std::string> arguments{"run", "--out", report().string()};
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    arguments.insert(arguments.end(), {"--", "/bin/sh", "-c", "touch '" + ran.string() + "'"});
    return run(arguments);
  }

  /// Writes `text` into `path`, making its folder.
  static void write_file(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream{path} << text;
  }

  /// Waits (up to 30 s) for the READY file of nvtx_program's `wait` mode; returns the pid in it.
  pid_t wait_until_ready(const fs::path& ready) {
    for (int i = 0; i < 3000 && !fs::exists(ready); ++i) std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(fs::exists(ready)) << "the program never got going";
    return static_cast<pid_t>(std::atol(read_file(ready).c_str()));
  }

  /// Whether `pid` has ended (gone, or a zombie no one reaped yet), waiting up to 5 s for it.
  static bool ended(pid_t pid) {
    for (int i = 0; i < 500; ++i) {
      if (kill(pid, 0) != 0) return true;
      const auto stat = read_file(fs::path{"/proc"} / std::to_string(pid) / "stat");
      const auto state = stat.find(") ");
      if (state != std::string::npos && stat[state + 2] == 'Z') return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  fs::path report() const { return folder_ / "report"; }

  /// Runs a program that waits for a signal, sends `signal_number` to launchwatch once the program
  /// is ready, and returns launchwatch's exit status.
  int stop_while_running(int signal_number) {
    const auto ready = folder_ / "ready";
    const pid_t launchwatch = start({"run", "--out", report(), "--", NVTX_PROGRAM, "wait", ready.string()});
    wait_until_ready(ready);
    EXPECT_EQ(kill(launchwatch, signal_number), 0);
    return wait(launchwatch);
  }

  /// Waits for the program under `launchwatch` to write `ready`, then up to 10 s for a loadable
  /// summary.json (a snapshot) into `snapshot`; returns whether launchwatch still ran throughout.
  bool wait_for_snapshot(pid_t launchwatch, const fs::path& ready,
                         std::optional<launchwatch::pass_summary>& snapshot) {
    for (int i = 0; i < 3000 && !fs::exists(ready); ++i) std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(fs::exists(ready)) << "the program never got going";
    for (int i = 0; i < 100 && !snapshot; ++i) {
      std::this_thread::sleep_for(100ms);
      int status = 0;
      if (waitpid(launchwatch, &status, WNOHANG) != 0) return false;
      try {
        snapshot = launchwatch::load_summary(report() / "summary.json");
      } catch (const launchwatch::summary_error&) {
        // Not written yet: there is no summary.json until the first snapshot.
      }
    }
    return true;
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
  EXPECT_EQ(run_injected_with("LAUNCHWATCH_RUN_TIMING", "sometimes"), 4);
  EXPECT_THAT(err_, HasSubstr("LAUNCHWATCH_RUN_TIMING is 'sometimes'; use deferred, resolved, none or "
                              "windows:ON_MS/OFF_MS"));
}

TEST_F(RunCommand, TheInjectionsTimingWindowsAreTwoPositiveMillisecondCountsOrRefused) {
  EXPECT_EQ(run_injected_with("LAUNCHWATCH_RUN_TIMING", "windows:200/0"), 4);
  EXPECT_THAT(err_, HasSubstr("LAUNCHWATCH_RUN_TIMING: timing windows `200/0` are not ON_MS/OFF_MS"));
}

TEST_F(RunCommand, TimingWindowsWithoutAnOffTimeAreRefusedBeforeTheProgramRuns) {
  const auto ran = folder_ / "ran";
  EXPECT_NE(run_touching({"--timing", "windows:200"}, ran), 0);
  EXPECT_THAT(err_, HasSubstr("timing windows `200` are not ON_MS/OFF_MS"));
  EXPECT_THAT(err_, HasSubstr("as windows:200/800"));
  EXPECT_FALSE(fs::exists(ran));
}

TEST_F(RunCommand, TimingWindowsAreAcceptedAndTheProgramRuns) {
  EXPECT_EQ(run({"run", "--out", report(), "--timing", "windows:50/450", "--", NVTX_PROGRAM, "exit", "3"}),
            3)
      << err_;
  EXPECT_THAT(err_, Not(HasSubstr("--timing")));
}

TEST_F(RunCommand, TheInjectionsUnscopedSettingIsCheckedBeforeAnythingIsWatched) {
  EXPECT_EQ(run_injected_with("LAUNCHWATCH_RUN_UNSCOPED", "guess"), 4);
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

TEST_F(RunCommand, AnEarlierRunsProcessReportsAreRemovedOnceTheNewReportIsWritten) {
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "spawn", "0"}), 0) << err_;
  ASSERT_TRUE(fs::exists(report() / "processes"));
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "exit", "0"}), 0) << err_;
  EXPECT_FALSE(fs::exists(report() / "processes"));
  EXPECT_EQ(launchwatch::load_summary(report() / "summary.json").host_threads, 2u);
}

TEST_F(RunCommand, TheUsersOwnFilesInAStampedFolderSurviveTheNextRun) {
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "spawn", "0"}), 0) << err_;
  ASSERT_TRUE(fs::exists(report() / ".launchwatch-run"));
  write_file(report() / "notes.txt", "mine\n");
  write_file(report() / "processes" / "etl.py", "print('mine')\n");
  write_file(report() / "processes" / "keep" / "notes.txt", "mine too\n");
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "exit", "0"}), 0) << err_;
  EXPECT_EQ(read_file(report() / "notes.txt"), "mine\n");
  EXPECT_EQ(read_file(report() / "processes" / "etl.py"), "print('mine')\n");
  EXPECT_EQ(read_file(report() / "processes" / "keep" / "notes.txt"), "mine too\n");
  std::size_t report_folders = 0;
  for (const auto& entry : fs::directory_iterator{report() / "processes"}) {
    report_folders += entry.path().filename().string().starts_with("pid-") ? 1 : 0;
  }
  EXPECT_EQ(report_folders, 0u) << "the earlier run's report folder is still there";
}

TEST_F(RunCommand, AFolderHoldingFilesLaunchwatchDidNotWriteIsRefusedAndTheProgramDoesNotStart) {
  write_file(report() / "summary.json", "{\"mine\": true}\n");
  write_file(report() / "processes" / "etl.py", "print('mine')\n");
  const auto started = folder_ / "started";
  EXPECT_NE(run({"run", "--out", report(), "--", "/bin/sh", "-c", "echo > " + started.string()}), 0);
  EXPECT_FALSE(fs::exists(started)) << "the program ran";
  EXPECT_THAT(err_, HasSubstr("holds files that launchwatch did not write"));
  EXPECT_THAT(err_, HasSubstr("--force"));
  EXPECT_EQ(read_file(report() / "summary.json"), "{\"mine\": true}\n");
  EXPECT_EQ(read_file(report() / "processes" / "etl.py"), "print('mine')\n");
  EXPECT_FALSE(fs::exists(report() / ".launchwatch-run"));
}

TEST_F(RunCommand, ForceWritesTheReportIntoAFolderOfTheUsersAndRemovesNothingElse) {
  write_file(report() / "notes.txt", "mine\n");
  write_file(report() / "processes" / "etl.py", "print('mine')\n");
  ASSERT_EQ(run({"run", "--force", "-o", report(), "--", NVTX_PROGRAM, "exit", "0"}), 0) << err_;
  EXPECT_EQ(launchwatch::load_summary(report() / "summary.json").host_threads, 2u);
  EXPECT_EQ(read_file(report() / "notes.txt"), "mine\n");
  EXPECT_EQ(read_file(report() / "processes" / "etl.py"), "print('mine')\n");
}

TEST_F(RunCommand, AFolderThatCannotBeWrittenIsRefusedBeforeTheProgramStarts) {
  const auto started = folder_ / "started";
  // /proc takes no new file, not even from root.
  EXPECT_NE(run({"run", "--out", "/proc", "--", "/bin/sh", "-c", "echo > " + started.string()}), 0);
  EXPECT_FALSE(fs::exists(started)) << "the program ran";
  EXPECT_THAT(err_, HasSubstr("cannot write into /proc: "));
}

TEST_F(RunCommand, AnEarlierReportIsKeptWhenTheNewRunLeavesNone) {
  ASSERT_EQ(run({"run", "--out", report(), "--", NVTX_PROGRAM, "exit", "0"}), 0) << err_;
  const auto earlier = read_file(report() / "summary.json");
  EXPECT_EQ(run({"run", "--out", report(), "--", "/bin/sh", "-c", "exit 0"}), 0);
  EXPECT_THAT(err_, HasSubstr("still holds an earlier run's report"));
  EXPECT_EQ(read_file(report() / "summary.json"), earlier);
  EXPECT_TRUE(fs::exists(report() / "trace.json"));
}

TEST_F(RunCommand, SighupWritesTheReportAndEndsEveryProcessOfTheProgramsGroup) {
  const auto ready = folder_ / "ready";
  const pid_t launchwatch = start({"run", "--out", report(), "--", "/bin/sh", "-c",
                                   std::string{NVTX_PROGRAM} + " wait " + ready.string() + "; exit 0"});
  const pid_t program = wait_until_ready(ready);
  EXPECT_EQ(kill(launchwatch, SIGHUP), 0);
  EXPECT_EQ(wait(launchwatch), 128 + SIGHUP) << out_ << err_;
  EXPECT_TRUE(ended(program)) << "the shell's child was left running";
  EXPECT_THAT(out_, HasSubstr("1 process(es) it started left reports of their own")) << err_;
  std::string traces;
  for (const auto& entry : fs::directory_iterator{report() / "processes"}) traces += read_file(entry.path() / "trace.json");
  EXPECT_THAT(traces, HasSubstr(R"("name":"collected")"));
}

TEST_F(RunCommand, ASecondSigintEndsEveryProcessOfTheProgramsGroupAtOnce) {
  const auto ready = folder_ / "ready";
  // The shell and its child ignore SIGINT, so only the second one, made a SIGKILL, ends them.
  const pid_t launchwatch = start({"run", "--out", report(), "--", "/bin/sh", "-c",
                                   "trap '' INT; " + std::string{NVTX_PROGRAM} + " wait " + ready.string()});
  const pid_t program = wait_until_ready(ready);
  EXPECT_EQ(kill(launchwatch, SIGINT), 0);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(kill(program, 0), 0) << "the first SIGINT should have been ignored";
  const auto second = std::chrono::steady_clock::now();
  EXPECT_EQ(kill(launchwatch, SIGINT), 0);
  EXPECT_EQ(wait(launchwatch), 128 + SIGKILL) << out_ << err_;
  EXPECT_LT(std::chrono::steady_clock::now() - second, 5s);
  EXPECT_TRUE(ended(program));
  EXPECT_THAT(err_, HasSubstr("a second stop signal"));
}

TEST_F(RunCommand, AProcessKilledBeforeItsReportIsNamedAndTheOthersAreMerged) {
  const std::string program{NVTX_PROGRAM};
  EXPECT_EQ(run({"run", "--out", report(), "--", "/bin/sh", "-c", program + " exit 0; " + program + " kill 0"}),
            128 + SIGKILL);
  EXPECT_THAT(out_, HasSubstr("1 process(es) it started left reports of their own")) << err_;
  EXPECT_THAT(err_, HasSubstr("1 process(es) the program started were watched but left no report"));
  EXPECT_THAT(err_, ::testing::MatchesRegex("(.|\n)*left no report[^\n]*: pid-[0-9]+ (.|\n)*"));
}

TEST_F(RunCommand, ARankWithASlashInItsLabelIsMergedNotDropped) {
  const std::string program{NVTX_PROGRAM};
  ASSERT_EQ(run({"run", "--out", report(), "--", "/bin/sh", "-c",
                 "RANK=0/1 " + program + " exit 0; RANK=1 " + program + " exit 0"}),
            0)
      << err_;
  EXPECT_THAT(out_, HasSubstr("2 process(es) it started left reports of their own"));
  EXPECT_THAT(out_, HasSubstr("rank 0/1, pid "));
}

TEST_F(RunCommand, AProgramThatIsNotExecutableGivesStatus126) {
  write_file(folder_ / "not-executable.sh", "#!/bin/sh\nexit 0\n");
  fs::permissions(folder_ / "not-executable.sh", fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(run({"run", "--out", report(), "--", (folder_ / "not-executable.sh").string()}), 126);
  EXPECT_THAT(err_, HasSubstr("Permission denied"));
}

TEST_F(RunCommand, TheNsightSpellingOfTheProfilerApiCaptureRangeIsAccepted) {
  EXPECT_EQ(run({"run", "--capture-range", "cudaProfilerApi", "--out", report(), "--", NVTX_PROGRAM, "exit", "0"}), 0)
      << err_;
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

TEST_F(RunCommand, TraceEventsCapsTheTraceAndTheTablesLastLineAndTheTracesMetadataSayWhatWasLeftOut) {
  // 10 steps of outer/inner: 20 scope intervals. 5 fit; the 6th (step 2's outer) was open when the
  // prefix filled, so it is kept too, and the writer's own cap of 5 cuts it: 14 left out.
  ASSERT_EQ(run({"run", "--out", report(), "--trace-events", "5", "--", NVTX_PROGRAM, "steps", "10"}), 0) << err_;
  std::istringstream lines{out_};
  std::string line;
  std::string last;
  while (std::getline(lines, line)) {
    if (!line.empty()) last = line;
  }
  EXPECT_THAT(last, HasSubstr("--trace-events 5"));
  EXPECT_THAT(last, HasSubstr("left out: 0 later launches and 14 later scope intervals"));
  EXPECT_THAT(last, HasSubstr("and 1 events cut by the cap"));
  const auto trace = read_file(report() / "trace.json");
  EXPECT_THAT(trace, HasSubstr(R"("launches_beyond_prefix":0,"scope_intervals_beyond_prefix":14)"));
  EXPECT_THAT(trace, HasSubstr("14 scope intervals only in the summary"));
  EXPECT_EQ(count(trace, R"("cat":"scope")"), 5u) << trace;
  // The summary still has every thread that entered a scope.
  EXPECT_EQ(launchwatch::load_summary(report() / "summary.json").host_threads, 1u);
}

TEST_F(RunCommand, TraceEventsZeroKeepsEveryEventAndSaysNothingWasLeftOut) {
  ASSERT_EQ(run({"run", "--out", report(), "--trace-events", "0", "--", NVTX_PROGRAM, "steps", "10"}), 0) << err_;
  const auto trace = read_file(report() / "trace.json");
  EXPECT_EQ(count(trace, R"("cat":"scope")"), 20u);
  EXPECT_THAT(trace, Not(HasSubstr("launchwatch_dropped_events")));
  EXPECT_THAT(out_, Not(HasSubstr("left out:")));
}

TEST_F(RunCommand, ANegativeTraceEventsCountIsRefusedBeforeTheProgramRuns) {
  const auto ran = folder_ / "ran";
  EXPECT_NE(run_touching({"--trace-events", "-1"}, ran), 0);
  EXPECT_THAT(err_, HasSubstr("--trace-events"));
  EXPECT_FALSE(fs::exists(ran));
}

TEST_F(RunCommand, TheInjectionsTraceEventsSettingIsAWholeNumberOrRefused) {
  EXPECT_EQ(run_injected_with("LAUNCHWATCH_RUN_TRACE_EVENTS", "12x"), 4);
  EXPECT_THAT(err_, HasSubstr("LAUNCHWATCH_RUN_TRACE_EVENTS is '12x'; use a whole number of events"));
}

TEST_F(RunCommand, SnapshotEveryOneSecondLeavesALoadableSummaryWhileTheProgramStillRuns) {
  const auto ready = folder_ / "ready";
  const pid_t launchwatch =
      start({"run", "--out", report(), "--snapshot-every", "1", "--", NVTX_PROGRAM, "wait", ready.string()});
  std::optional<launchwatch::pass_summary> snapshot;
  const bool still_running = wait_for_snapshot(launchwatch, ready, snapshot);
  EXPECT_TRUE(still_running) << "launchwatch ended before a snapshot was read";
  ASSERT_TRUE(snapshot.has_value()) << "no loadable summary.json within 10 s";
  // The thread that left its "collected" range is in it.
  EXPECT_EQ(snapshot->host_threads, 1u);
  EXPECT_EQ(kill(launchwatch, SIGTERM), 0);
  EXPECT_EQ(wait(launchwatch), 128 + SIGTERM) << err_;
  EXPECT_EQ(launchwatch::load_summary(report() / "summary.json").host_threads, 1u);
  // No temporary file is left behind.
  for (const auto& entry : fs::directory_iterator{report()}) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp"))) << entry.path();
  }
}

TEST_F(RunCommand, AProgramKilledBySigkillLeavesItsLastSnapshotAndItIsPrintedAsOne) {
  const auto ready = folder_ / "ready";
  const pid_t launchwatch =
      start({"run", "--out", report(), "--snapshot-every", "1", "--", NVTX_PROGRAM, "wait", ready.string()});
  std::optional<launchwatch::pass_summary> snapshot;
  ASSERT_TRUE(wait_for_snapshot(launchwatch, ready, snapshot));
  ASSERT_TRUE(snapshot.has_value());
  // SIGKILL the program (its pid is in the file it made ready), as a scheduler ending a job would.
  std::istringstream ready_file{read_file(ready)};
  pid_t program = 0;
  ASSERT_TRUE(ready_file >> program);
  EXPECT_EQ(kill(program, SIGKILL), 0);
  EXPECT_EQ(wait(launchwatch), 128 + SIGKILL) << err_;
  EXPECT_THAT(out_, HasSubstr("ended before its report was written"));
  EXPECT_THAT(out_, HasSubstr("is its last snapshot (--snapshot-every 1)"));
  EXPECT_EQ(launchwatch::load_summary(report() / "summary.json").host_threads, 1u);
}

}  // namespace

namespace {

/// `launchwatch demo` and `launchwatch run` on a small file system of their own (a tmpfs mounted in
/// a mount namespace of the test's, so nothing outside sees it): what a full disk does to a report.
class FullDisk : public RunCommand {
 protected:
  /// Runs `script` in /bin/sh with $DIR a tmpfs of `kilobytes` and $RESULT a folder outside it that
  /// the script copies what it wants checked into; $LW is launchwatch, $P nvtx_program. Returns the
  /// script's exit status; skips the test where no tmpfs can be mounted (not root, no namespaces).
  int on_a_small_disk(int kilobytes, const std::string& script) {
    const auto disk = folder_ / "disk";
    fs::create_directories(disk);
    fs::create_directories(result());
    const std::string whole = "mount -t tmpfs -o size=" + std::to_string(kilobytes) +
                              "k launchwatch-test \"$DIR\" || exit 99\n" + script;
    setenv("DIR", disk.c_str(), 1);
    setenv("RESULT", result().c_str(), 1);
    setenv("LW", LAUNCHWATCH_PROGRAM, 1);
    setenv("P", NVTX_PROGRAM, 1);
    const int status = wait(spawn({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", whole}));
    if (status == 99 || status == 1 && err_.find("unshare") != std::string::npos) {
      skipped_ = true;
    }
    return status;
  }

  fs::path result() const { return folder_ / "result"; }

  /// Names in `folder` that are temporary files of a write cut short.
  static std::vector<std::string> partial_files(const fs::path& folder) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator{folder}) {
      if (entry.path().filename().string().ends_with(".launchwatch-partial")) found.push_back(entry.path().filename());
    }
    return found;
  }

  bool skipped_ = false;
};

const std::string small_demo = "--layers 2 --tokens 16 --width 32 --heads 4 --hidden 64 --passes 2 --no-progress";

TEST_F(FullDisk, ADemoThatFindsTheDiskFullKeepsTheEarlierReportWholeAndNamesTheFile) {
  const int status = on_a_small_disk(512, "$LW demo " + small_demo + " --out \"$DIR/out\" >/dev/null || exit 98\n"
                                          "cp -a \"$DIR/out\" \"$RESULT/before\"\n"
                                          // One page left: the folder's checks pass, the files do not fit.
                                          "free=$(df -k --output=avail \"$DIR\" | tail -n 1)\n"
                                          "dd if=/dev/zero of=\"$DIR/filler\" bs=4k count=$(( free / 4 - 1 )) 2>/dev/null\n"
                                          "$LW demo " + small_demo + " --out \"$DIR/out\"; echo \"demo $?\"\n"
                                          "cp -a \"$DIR/out\" \"$RESULT/after\"\n");
  if (skipped_) GTEST_SKIP() << "no tmpfs could be mounted here: " << err_;
  ASSERT_EQ(status, 0) << out_ << err_;
  EXPECT_THAT(out_, HasSubstr("demo 1"));
  EXPECT_THAT(err_, HasSubstr("could not finish writing "));
  EXPECT_THAT(err_, HasSubstr("summary.json (No space left on device)"));
  EXPECT_THAT(err_, HasSubstr("trace.json (No space left on device)"));
  // flame.folded fits in the page left, so it may be the new one; the others are the earlier ones.
  for (const auto* name : {"summary.json", "trace.json"}) {
    EXPECT_EQ(read_file(result() / "after" / name), read_file(result() / "before" / name)) << name;
  }
  EXPECT_THAT(partial_files(result() / "after"), ::testing::IsEmpty());
}

TEST_F(FullDisk, SummaryJsonIsWrittenFirstSoItIsWholeWhenTheTraceDoesNotFit) {
  // Room for the stamp, summary.json and flame.folded (6 pages of 4 KB for the small demo), not
  // for the trace (9 more).
  const int status = on_a_small_disk(32, "$LW demo " + small_demo + " --out \"$DIR/out\"; echo \"demo $?\"\n"
                                         "cp -a \"$DIR/out\" \"$RESULT/after\"\n");
  if (skipped_) GTEST_SKIP() << "no tmpfs could be mounted here: " << err_;
  ASSERT_EQ(status, 0) << out_ << err_;
  EXPECT_THAT(out_, HasSubstr("demo 1"));
  EXPECT_THAT(err_, HasSubstr("trace.json (No space left on device)"));
  EXPECT_THAT(err_, Not(HasSubstr("summary.json (")));
  const auto summary = launchwatch::load_summary(result() / "after" / "summary.json");
  EXPECT_THAT(out_, HasSubstr(std::to_string(summary.launches) + " launches:"));
  EXPECT_FALSE(fs::exists(result() / "after" / "trace.json"));
  EXPECT_THAT(partial_files(result() / "after"), ::testing::IsEmpty());
}

TEST_F(FullDisk, ARunWhoseReportDoesNotFitSaysSoInItsLastLine) {
  // The disk fills while the program runs; then it is stopped, and its report cannot be written.
  const int status = on_a_small_disk(256, "$LW run --out \"$DIR/out\" -- $P wait \"$RESULT/ready\" & lw=$!\n"
                                          "while [ ! -e \"$RESULT/ready\" ]; do sleep 0.05; done\n"
                                          "dd if=/dev/zero of=\"$DIR/filler\" bs=4k 2>/dev/null\n"
                                          "kill -TERM $lw; wait $lw; echo \"run $?\"\n"
                                          "cp -a \"$DIR/out\" \"$RESULT/after\"\n");
  if (skipped_) GTEST_SKIP() << "no tmpfs could be mounted here: " << err_;
  ASSERT_EQ(status, 0) << out_ << err_;
  EXPECT_THAT(out_, HasSubstr("run 143"));
  EXPECT_THAT(err_, HasSubstr("was ended by signal 15 (Terminated), but its report could not be written: could not "
                              "finish writing"));
  EXPECT_THAT(err_, Not(HasSubstr("nothing was watched")));
  EXPECT_FALSE(fs::exists(result() / "after" / "summary.json"));
  EXPECT_THAT(partial_files(result() / "after"), ::testing::IsEmpty());
}

TEST_F(RunCommand, ADemoInterruptedByCtrlCLeavesTheEarlierRunsFilesAsTheyWere) {
  const auto out = folder_ / "demo";
  std::vector<std::string> demo{"demo", "--layers", "2", "--tokens", "16", "--width", "32", "--heads", "4",
                                "--hidden", "64", "--no-progress", "--out", out.string()};
  auto first = demo;
  first.insert(first.end(), {"--passes", "2"});
  ASSERT_EQ(run(first), 0) << err_;
  std::vector<std::string> before;
  for (const auto* name : {"summary.json", "flame.folded", "trace.json"}) before.push_back(read_file(out / name));
  auto longer = demo;
  longer.insert(longer.end(), {"--passes", "100000"});
  const pid_t pid = start(longer);
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(kill(pid, SIGINT), 0);
  EXPECT_EQ(wait(pid), -1) << "the demo was not ended by SIGINT: " << out_ << err_;
  std::size_t i = 0;
  for (const auto* name : {"summary.json", "flame.folded", "trace.json"}) {
    EXPECT_EQ(read_file(out / name), before[i++]) << name;
  }
}

TEST_F(RunCommand, VersionSaysWhichLaunchwatchThisIs) {
  EXPECT_EQ(run({"--version"}), 0);
  EXPECT_THAT(out_, ::testing::MatchesRegex("launchwatch [0-9]+\\.[0-9]+\\.[0-9]+ \\(CUDA [a-z ]+(, HIP [A-Za-z ]+)?, Vulkan [a-z ]+\\)\n"));
}

}  // namespace
