// Peak memory of an attribution over a long run: the full record against the aggregate-only mode,
// side by side in one run. Each row runs in a child process of its own, so its peak resident set
// (getrusage's ru_maxrss, from wait4) is that row's alone; a row with no launches gives the
// baseline every other row is measured from.
//
// Launches go through the launch path's hooks as a runtime issues them (the loop of
// attribution_bench.cpp, with an empty submission): under `model/layer i/{attention,mlp}` scopes,
// six kernels on two streams, each timed deferred with a host-clock measurement that is already
// complete, so what is measured is the attribution and not a device.
//
//   launchwatch_aggregate_memory_bench [launches, default 10000000]

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>
#include <launchwatch/report/summary.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace launchwatch;

constexpr std::array<std::string_view, 6> kernels{
    "demo::ops::layer_norm<float>", "demo::ops::matmul<float, 16>", "demo::ops::softmax<float>",
    "demo::ops::gelu<float>",       "demo::ops::add<float>",        "demo::copy"};
const std::array<std::string, 4> layers{"layer 0", "layer 1", "layer 2", "layer 3"};

/// One row: `launches` launches under an attribution (none when `launches` is 0); exits non-zero
/// when the summary did not count every launch.
int run_row(bool aggregate_only, long long launches) {
  if (launches == 0) return 0;
  attribution_options options;
  options.timing = timing_request::deferred;
  options.aggregate_only = aggregate_only;
  auto observer = std::make_shared<attribution>(options);
  {
    launch_observation watching{observer};
    scope model{"model"};
    for (long long i = 0; i < launches; ++i) {
      scope layer{layers[static_cast<std::size_t>(i / 12 % 4)]};
      scope part{i % 12 < 6 ? "attention" : "mlp"};
      launch_info info;
      info.kernel = kernels[static_cast<std::size_t>(i % 6)];
      info.backend = "cpu";
      info.stream = 1 + static_cast<std::uint64_t>(i % 2);
      launch_path::notify_launch(info);
      if (launch_path::timing_wanted()) {
        const auto start = std::chrono::steady_clock::now();
        launch_path::notify_profiled(info.kernel, profile_duration::from_system_time(start, start));
      }
    }
  }
  const auto summary = observer->collect_summary();
  if (summary.launches != static_cast<std::size_t>(launches)) {
    std::fprintf(stderr, "FAILED: the summary counted %zu launches of %lld\n", summary.launches, launches);
    return 2;
  }
  return 0;
}

struct row_result {
  long peak_kib = 0;
  double cpu_s = 0;
  bool ok = false;
};

row_result in_child(bool aggregate_only, long long launches) {
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) _exit(run_row(aggregate_only, launches));
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  row_result result;
  result.peak_kib = usage.ru_maxrss;
  result.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                 static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  const long long launches = argc > 1 ? std::atoll(argv[1]) : 10'000'000;
  const long long tenth = launches / 10;
  struct row {
    const char* name;
    bool aggregate_only;
    long long launches;
    row_result result;
  };
  std::vector<row> rows{{"baseline (no launches)", false, 0, {}},
                        {"full record", false, tenth, {}},
                        {"aggregate-only", true, tenth, {}},
                        {"aggregate-only", true, launches, {}}};
  for (auto& r : rows) r.result = in_child(r.aggregate_only, r.launches);

  const long base = rows[0].result.peak_kib;
  std::printf("%-24s %12s %14s %14s %14s %12s\n", "row", "launches", "peak RSS KiB", "above base KiB",
              "bytes/launch", "CPU ns/launch");
  bool all_ok = true;
  for (const auto& r : rows) {
    const long above = r.result.peak_kib - base;
    all_ok = all_ok && r.result.ok;
    std::printf("%-24s %12lld %14ld %14ld %14.1f %12.0f%s\n", r.name, r.launches, r.result.peak_kib,
                above, r.launches > 0 ? 1024.0 * static_cast<double>(above) / static_cast<double>(r.launches) : 0.0,
                r.launches > 0 ? 1e9 * r.result.cpu_s / static_cast<double>(r.launches) : 0.0,
                r.result.ok ? "" : "  FAILED");
  }
  const auto above = [&](const row& r) {
    return static_cast<double>(std::max(1L, r.result.peak_kib - base));
  };
  std::printf("\nfull record / aggregate-only at %lld launches, memory above base: %.1fx\n", tenth,
              above(rows[1]) / above(rows[2]));
  std::printf("aggregate-only at %lld / at %lld launches, memory above base: %.2fx (bounded: ~1x)\n",
              launches, tenth, above(rows[3]) / above(rows[2]));
  return all_ok ? 0 : 1;
}
