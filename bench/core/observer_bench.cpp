// What the observer core costs a launch, measured side by side in one run.
//
// Every hook runs inside a loop of the same shape as its baseline (the kernel name kept opaque to
// the compiler, then the hook), so a ratio between two rows is the hook's cost and not the
// harness's. The summary printed after the table gives the ratios, computed from the CPU time per
// call (the median when --benchmark_repetitions is given): CPU time, because this runs on machines
// shared with other work, where wall time also counts the time a thread waited for a core.
//
//   launchwatch_observer_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>

#include "support/bench_summary.hpp"

namespace {

using launchwatch::launch_info;
using launchwatch::launch_observation;
using launchwatch::launch_observer;
namespace launch_path = launchwatch::launch_path;

// Long enough for a benchmark's median to settle, short enough that the whole run (ten benchmarks,
// five repetitions) stays around half a minute on a two-core machine.
constexpr double min_time_s = 0.2;

constexpr std::string_view kernel_name = "launchwatch_bench::saxpy<float>";

/// The cheapest observer that still does something with each launch (one relaxed increment), so
/// the names-only rows measure the observer core and not the observer. Each thread counts on a
/// cache line of its own: one shared counter would make the threaded rows measure the observer's
/// contention (on a 16-core host it did: 3.8x per call with 2 threads, 7.7x with 4).
class counting_observer final : public launch_observer {
 public:
  void launched(std::string_view) override {
    lines_[line_of_this_thread()].count.fetch_add(1, std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t count() const noexcept {
    std::uint64_t total = 0;
    for (const auto& line : lines_) total += line.count.load(std::memory_order_relaxed);
    return total;
  }

 private:
  struct alignas(64) line {
    std::atomic<std::uint64_t> count{0};
  };
  static std::size_t line_of_this_thread() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t index = next.fetch_add(1, std::memory_order_relaxed) % 64;
    return index;
  }
  std::array<line, 64> lines_{};
};

const auto counter = std::make_shared<counting_observer>();
std::optional<launch_observation> installed;
// Set when a names-only run saw fewer launches than it issued: its time would then be a lie.
bool observer_missed_launches = false;

// Installed once per run (not per thread) through the benchmark's Setup and Teardown, so every
// thread of a threaded run reports to the same observer through the same slot.
void install_counter(const benchmark::State&) { installed.emplace(counter); }
void drop_counter(const benchmark::State&) { installed.reset(); }

/// Makes the name unknown to the compiler, as a launch path's name is, while leaving it in registers.
/// benchmark::DoNotOptimize would force a string_view through memory, adding two stack loads to
/// every row but the empty loop's.
inline void opaque(std::string_view& kernel) {
  const char* data = kernel.data();
  std::size_t size = kernel.size();
  asm volatile("" : "+r"(data), "+r"(size));
  kernel = std::string_view{data, size};
}

/// The loop every row shares: the name made opaque, then the hook under test.
template <class Hook>
void run_loop(benchmark::State& state, Hook hook) {
  // An idle row that found an observer installed (or a names-only row that found none) would
  // time the other path under this row's name.
  if (launch_path::is_observing() != installed.has_value()) {
    state.SkipWithError("the observer slot is not in the state this row measures");
  }
  std::string_view kernel = kernel_name;
  for (auto _ : state) {
    opaque(kernel);
    hook(kernel);
  }
}

/// What a call that cannot be inlined costs: the baseline a hook that lived behind a function call
/// would pay before doing anything.
[[gnu::noinline]] void empty_out_of_line(std::string_view kernel) {
  opaque(kernel);
}

/// A launch_info built the way a runtime builds it: only after is_observing() said yes, from values
/// the compiler cannot fold (the opaque name's length stands in for the stream and grid).
void notify_with_info(std::string_view kernel) {
  if (launch_path::is_observing()) {
    launch_info info;
    info.kernel = kernel;
    info.stream = kernel.size();
    info.cube_count = {static_cast<std::uint32_t>(kernel.size()), 1, 1};
    info.cube_dim = {256, 1, 1};
    launch_path::notify_launch(info);
  }
}

void bm_empty_loop(benchmark::State& state) {
  run_loop(state, [](std::string_view) {});
}

void bm_empty_out_of_line_call(benchmark::State& state) {
  run_loop(state, [](std::string_view kernel) { empty_out_of_line(kernel); });
}

void bm_notify_launch_idle(benchmark::State& state) {
  run_loop(state, [](std::string_view kernel) { launch_path::notify_launch(kernel); });
}

void bm_notify_launch_names_only(benchmark::State& state) {
  const auto before = counter->count();
  run_loop(state, [](std::string_view kernel) { launch_path::notify_launch(kernel); });
  // Threads share the counter, so only a single-threaded run can check its own launches.
  if (state.threads() == 1 &&
      counter->count() - before != static_cast<std::uint64_t>(state.iterations())) {
    observer_missed_launches = true;
  }
}

void bm_timing_wanted(benchmark::State& state) {
  // Summed rather than passed to DoNotOptimize each time, so the loop keeps its shape; the atomic
  // load cannot be hoisted out of it.
  std::uint64_t wanted = 0;
  run_loop(state, [&wanted](std::string_view) { wanted += launch_path::timing_wanted() ? 1 : 0; });
  benchmark::DoNotOptimize(wanted);
}

void bm_notify_launch_info(benchmark::State& state) {
  run_loop(state, [](std::string_view kernel) { notify_with_info(kernel); });
}

BENCHMARK(bm_empty_loop)->MinTime(min_time_s);
BENCHMARK(bm_empty_out_of_line_call)->MinTime(min_time_s);
BENCHMARK(bm_notify_launch_idle)->MinTime(min_time_s);
BENCHMARK(bm_notify_launch_names_only)
    ->Setup(install_counter)
    ->Teardown(drop_counter)
    ->MinTime(min_time_s)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4);
BENCHMARK(bm_timing_wanted)->Name("bm_timing_wanted_idle")->MinTime(min_time_s);
BENCHMARK(bm_timing_wanted)
    ->Name("bm_timing_wanted_names_only")
    ->Setup(install_counter)
    ->Teardown(drop_counter)
    ->MinTime(min_time_s);
BENCHMARK(bm_notify_launch_info)->Name("bm_notify_launch_info_idle")->MinTime(min_time_s);
BENCHMARK(bm_notify_launch_info)
    ->Name("bm_notify_launch_info_names_only")
    ->Setup(install_counter)
    ->Teardown(drop_counter)
    ->MinTime(min_time_s);

namespace bench = launchwatch::bench;

constexpr bench::summary_row summary_rows[] = {
    {"bm_empty_loop", 1, "empty loop"},
    {"bm_empty_out_of_line_call", 1, "empty out-of-line call"},
    {"bm_notify_launch_idle", 1, "notify_launch, idle"},
    {"bm_notify_launch_names_only", 1, "notify_launch, names-only observer"},
    {"bm_notify_launch_names_only", 2, "notify_launch, names-only, 2 threads"},
    {"bm_notify_launch_names_only", 4, "notify_launch, names-only, 4 threads"},
    {"bm_timing_wanted_idle", 1, "timing_wanted, idle"},
    {"bm_timing_wanted_names_only", 1, "timing_wanted, names-only observer"},
    {"bm_notify_launch_info_idle", 1, "notify_launch(launch_info), idle"},
    {"bm_notify_launch_info_names_only", 1, "notify_launch(launch_info), names-only"},
};

constexpr bench::summary_ratio summary_ratios[] = {
    {"idle notify_launch / empty loop", "bm_notify_launch_idle", 1, "bm_empty_loop", 1},
    {"idle notify_launch / empty out-of-line call", "bm_notify_launch_idle", 1,
     "bm_empty_out_of_line_call", 1},
    {"names-only notify_launch / idle", "bm_notify_launch_names_only", 1, "bm_notify_launch_idle",
     1},
    {"idle timing_wanted / empty loop", "bm_timing_wanted_idle", 1, "bm_empty_loop", 1},
    {"names-only timing_wanted / idle", "bm_timing_wanted_names_only", 1, "bm_timing_wanted_idle",
     1},
    {"idle notify_launch(launch_info) / empty loop", "bm_notify_launch_info_idle", 1,
     "bm_empty_loop", 1},
    {"names-only, 2 threads / 1 thread (per call)", "bm_notify_launch_names_only", 2,
     "bm_notify_launch_names_only", 1},
    {"names-only, 4 threads / 1 thread (per call)", "bm_notify_launch_names_only", 4,
     "bm_notify_launch_names_only", 1},
};

/// The summary printed after the console table: every row's time, then the ratios between rows.
void print_summary(std::ostream& out, const bench::run_collector& runs) {
  out << "\nSummary: CPU time per call (median of the repetitions), and ratios between rows\n";
  bench::print_rows(out, runs, summary_rows, {.label_width = 46});
  out << '\n';
  bench::print_ratios(out, runs, summary_ratios, 46);
  if (observer_missed_launches) {
    out << "\nFAILED: the names-only observer counted fewer launches than were issued, so its "
           "rows do not measure what they claim.\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench::summary_reporter reporter{print_summary};
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return observer_missed_launches ? 1 : 0;
}
