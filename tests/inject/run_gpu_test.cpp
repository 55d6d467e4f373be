// `launchwatch run` on the GPU (label gpu; skipped without one): the C++ example
// (examples/cuda_bridge_scopes.cu) and the PyTorch example (examples/torch_nvtx_train.py) run
// unmodified, and every kernel they launch is in the report under its scope or NVTX range.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <launchwatch/attribute/summary.hpp>

namespace launchwatch {
namespace {

namespace fs = std::filesystem;

/// The node at `path` (scope names from the top), or null.
const summary_node* find(const std::vector<summary_node>& nodes, std::initializer_list<std::string_view> path) {
  const summary_node* found = nullptr;
  const auto* level = &nodes;
  for (const auto name : path) {
    found = nullptr;
    for (const auto& node : *level) {
      if (node.kind == summary_node::node_kind::scope && node.name == name) found = &node;
    }
    if (found == nullptr) return nullptr;
    level = &found->children;
  }
  return found;
}

class RunOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device here";
    out_ = fs::temp_directory_path() / ("launchwatch-run-gpu-" + std::to_string(::getpid()));
    fs::remove_all(out_);
  }
  void TearDown() override { fs::remove_all(out_); }

  /// Runs `launchwatch run --out OUT OPTIONS -- COMMAND` for at most 120 s (a hang fails the test
  /// rather than the whole run); returns its exit status, its output in `output_`.
  int run(const std::string& options, const std::string& command) {
    const std::string line = "timeout -s INT 120 " + std::string{LAUNCHWATCH_PROGRAM} + " run --out " +
                             out_.string() + " " + options + " -- " + command + " 2>&1";
    std::FILE* pipe = ::popen(line.c_str(), "r");
    output_.clear();
    char chunk[4096];
    for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) output_.append(chunk, n);
    const int status = ::pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  pass_summary summary() const { return load_summary(out_ / "summary.json"); }

  fs::path out_;
  std::string output_;
};

TEST_F(RunOnGpu, TheCxxExamplesKernelsAreAttributedToItsScopesAndNvtxRanges) {
  constexpr int threads = 3;
  constexpr int steps = 4;
  ASSERT_EQ(run("", std::string{CUDA_EXAMPLE} + " --threads " + std::to_string(threads) + " --steps " +
                        std::to_string(steps)),
            0)
      << output_;
  const auto s = summary();
  EXPECT_EQ(s.outside.launches, 0u) << output_;
  std::size_t counted = 0;
  for (int t = 0; t < threads; ++t) {
    const std::string worker = "worker " + std::to_string(t);
    const auto* fill = find(s.scopes, {worker, "step", "fill"});      // a launchwatch scope in an NVTX range
    const auto* gemm = find(s.scopes, {worker, "step", "gemm"});      // an NVTX domain range: cuBLAS's kernels
    const auto* scale = find(s.scopes, {worker, "step", "scale"});
    ASSERT_NE(fill, nullptr) << worker << '\n' << output_;
    ASSERT_NE(gemm, nullptr) << worker << '\n' << output_;
    ASSERT_NE(scale, nullptr) << worker << '\n' << output_;
    EXPECT_EQ(fill->launches, 2u * steps);
    EXPECT_GE(gemm->launches, static_cast<std::size_t>(steps));
    EXPECT_EQ(scale->launches, static_cast<std::size_t>(steps));
    EXPECT_EQ(fill->timed_launches, fill->launches);  // deferred: every kernel has its device time
    counted += find(s.scopes, {worker})->launches;
  }
  EXPECT_EQ(counted, s.launches);
}

TEST_F(RunOnGpu, AGraphsReplayedKernelsAreChargedWithTheirTimeToTheRangeItWasCapturedIn) {
  constexpr int replays = 4;
  constexpr int kernels = 3;  // the example's graph_kernels
  ASSERT_EQ(run("", std::string{CUDA_EXAMPLE} + " --threads 1 --steps 1 --graph " + std::to_string(replays)), 0)
      << output_;
  ASSERT_NE(output_.find("graph replays: 4 of 3 kernels"), std::string::npos) << output_;
  const auto s = summary();
  const auto* captured = find(s.scopes, {"graph capture"});
  ASSERT_NE(captured, nullptr) << output_;
  // The captured launches (no time of their own), then every replayed kernel with its device time.
  EXPECT_EQ(captured->launches, static_cast<std::size_t>(kernels + replays * kernels)) << output_;
  EXPECT_EQ(captured->timed_launches, static_cast<std::size_t>(replays * kernels)) << output_;
  EXPECT_GT(captured->total.count(), 0);
  EXPECT_EQ(find(s.scopes, {"graph replay"}), nullptr) << "nothing was launched there but replays";
  EXPECT_EQ(s.host_threads, 2u) << "main and the worker; the replays' list is no host thread";
}

TEST_F(RunOnGpu, TheProfilerApiCaptureRangeCountsOnlyTheLaunchesInside) {
  ASSERT_EQ(run("--capture-range cuda-profiler-api", std::string{CUDA_EXAMPLE} + " --profile-window"), 0) << output_;
  ASSERT_NE(output_.find("launches inside the profiler window: 5"), std::string::npos) << output_;
  EXPECT_EQ(summary().launches, 5u) << output_;
  EXPECT_NE(output_.find("the report holds the 5 CUDA launches between cudaProfilerStart"),
            std::string::npos)
      << output_;
}

TEST_F(RunOnGpu, ACaptureRangeTheProgramNeverOpensIsNamedAsWhyTheReportIsEmpty) {
  ASSERT_EQ(run("--capture-range cuda-profiler-api", CUDA_EXAMPLE), 0) << output_;
  EXPECT_EQ(summary().launches, 0u) << output_;
  EXPECT_NE(output_.find("no CUDA launch fell between cudaProfilerStart and cudaProfilerStop"),
            std::string::npos)
      << output_;
}

TEST_F(RunOnGpu, EveryKernelOfThePytorchStepIsInItsNvtxScope) {
  if (std::system("python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 cannot import torch with CUDA here";
  }
  ASSERT_EQ(run("", std::string{"python3 "} + TORCH_EXAMPLE + " --steps 3"), 0) << output_;
  const auto s = summary();
  EXPECT_GT(s.launches, 0u) << output_;
  EXPECT_EQ(s.outside.launches, 0u) << output_;
  for (const char* part : {"forward", "backward", "optimizer"}) {
    const auto* node = find(s.scopes, {"step", part});
    ASSERT_NE(node, nullptr) << part << '\n' << output_;
    EXPECT_GT(node->launches, 0u) << part;
  }
}

/// How many times `text` occurs in `in`.
std::size_t occurrences(const std::string& in, std::string_view text) {
  std::size_t count = 0;
  for (auto at = in.find(text); at != std::string::npos; at = in.find(text, at + text.size())) {
    ++count;
  }
  return count;
}

// Issue 23: the PyTorch profiler inside a program under `run`. No crash, no hang, launchwatch
// counts on. On drivers where CUPTI has one subscriber (r580), Kineto's subscription is refused
// and it traces the CPU only ("CUDA profiler activities will be missing"), as under Nsight
// Systems, leaving CUPTI's records to launchwatch: every launch is timed. Where it does take the
// records, launchwatch says so once, counts on untimed, and says its timing is partial.
TEST_F(RunOnGpu, APytorchProfilerInsideTheProgramNeitherCrashesNorHangsAndTheRunCountsOn) {
  const char* probe = "python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1";
  if (std::system(probe) != 0) {
    GTEST_SKIP() << "python3 cannot import torch with CUDA here";
  }
  ASSERT_EQ(run("", std::string{"python3 "} + TORCH_PROFILER_EXAMPLE), 0) << output_;
  ASSERT_NE(output_.find("done"), std::string::npos) << output_;
  const auto at = output_.find("profiler kernels: ");
  ASSERT_NE(at, std::string::npos) << output_;
  const std::size_t profiled = std::stoul(output_.substr(at + 18));
  std::printf("torch.profiler under launchwatch run recorded %zu kernels\n", profiled);
  const auto s = summary();
  EXPECT_GT(s.launches, 0u) << output_;
  const std::size_t taken = occurrences(output_, "stopped reaching launchwatch");
  EXPECT_LE(taken, 1u) << "said once\n" << output_;
  if (profiled == 0) {
    EXPECT_EQ(taken, 0u) << output_;
    EXPECT_EQ(s.timed_launches, s.launches) << "nothing took the records\n" << output_;
  } else {
    EXPECT_EQ(taken, 1u) << output_;
    EXPECT_EQ(occurrences(output_, "timing is partial"), 1u) << output_;
    EXPECT_LT(s.timed_launches, s.launches) << output_;
  }
}

}  // namespace
}  // namespace launchwatch
