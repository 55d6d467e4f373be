// The end of `launchwatch run` while the program's CUDA is still at work (label gpu; skipped
// without a device): a helper thread launching while main returns (finding 13 and 15 of review
// 2026-12-01b: the bridge's records are closed at the end of the run, and no late callback reads
// freed memory), cudaDeviceReset before exit (U2), kernels still queued at exit (U4). Each run must
// end as the program ends unwatched, and leave a report.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <launchwatch/attribute/summary.hpp>

namespace launchwatch {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

class RunEndsWhileCudaWorks : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      GTEST_SKIP() << "no CUDA device here";
    }
    out_ = fs::temp_directory_path() / ("launchwatch-run-exit-" + std::to_string(::getpid()));
    fs::remove_all(out_);
  }
  void TearDown() override { fs::remove_all(out_); }

  /// `launchwatch run --out OUT -- EXIT_PROGRAM mode`, killed after 60 s; its exit status (128 +
  /// the signal when a signal ended it), its output in `output_`.
  int run(const std::string& mode) {
    return status_of(std::string{LAUNCHWATCH_PROGRAM} + " run --out " + out_.string() + " -- " +
                     EXIT_PROGRAM + " " + mode);
  }

  /// The program alone, unwatched: its exit status as run() counts it.
  int plain(const std::string& mode) { return status_of(std::string{EXIT_PROGRAM} + " " + mode); }

  /// `command`, killed after 60 s: its exit status, its output in `output_`.
  int status_of(const std::string& command) {
    const std::string line = "timeout -s KILL 60 " + command + " 2>&1";
    std::FILE* pipe = ::popen(line.c_str(), "r");
    output_.clear();
    char chunk[4096];
    for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) {
      output_.append(chunk, n);
    }
    const int status = ::pclose(pipe);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  /// How many runs a repeated test makes: LAUNCHWATCH_EXIT_RUNS (the issue asks 200 on the H200),
  /// 20 by default.
  static int runs() {
    const char* asked = std::getenv("LAUNCHWATCH_EXIT_RUNS");
    const int n = asked != nullptr ? std::atoi(asked) : 0;
    return n > 0 ? n : 20;
  }

  fs::path out_;
  std::string output_;
};

// Unwatched, this program ends either with 0 or by SIGSEGV, as the race between the CUDA runtime's
// teardown at exit and the helper's next launch falls: on the H200 (driver 580, CUDA 13) 44 of 200
// runs ended with 0 and 156 by SIGSEGV (docs/benchmarks.md, "Every runtime"; under `launchwatch run`
// 39 and 161). So what launchwatch owes is no ending of its own: every watched run ends well or as
// some unwatched run of it ended, never hangs, and leaves the report.
TEST_F(RunEndsWhileCudaWorks, AHelperThreadLaunchingWhileMainReturnsEndsOnlyAsItDoesUnwatchedAndLeavesTheReport) {
  const int n = runs();
  std::set<int> unwatched;
  for (int i = 0; i < std::min(n, 10); ++i) unwatched.insert(plain("helper-launches-at-exit"));
  for (int i = 0; i < n; ++i) {
    fs::remove_all(out_);
    const int status = run("helper-launches-at-exit");
    EXPECT_TRUE(status == 0 || unwatched.count(status) != 0)
        << "run " << i + 1 << " of " << n << " ended with " << status
        << ", which no unwatched run did\n"
        << output_;
    ASSERT_TRUE(fs::exists(out_ / "summary.json")) << "run " << i + 1 << '\n' << output_;
  }
}

TEST_F(RunEndsWhileCudaWorks, ADeviceResetBeforeExitDoesNotHoldTheReportUp) {
  const auto began = clock_type::now();
  ASSERT_EQ(run("reset-before-exit"), 0) << output_;
  EXPECT_LT(clock_type::now() - began, std::chrono::seconds{10}) << output_;
  EXPECT_EQ(load_summary(out_ / "summary.json").launches, 100u) << output_;
  std::printf("U2: %s\n", output_.c_str());
}

TEST_F(RunEndsWhileCudaWorks, KernelsStillQueuedAtExitEndWithStatusZero) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(run("queued-at-exit"), 0) << "run " << i + 1 << '\n' << output_;
    EXPECT_EQ(load_summary(out_ / "summary.json").launches, 10000u) << output_;
  }
}

}  // namespace
}  // namespace launchwatch
