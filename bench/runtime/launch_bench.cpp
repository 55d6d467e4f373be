// What a launch costs on the CPU backend, measured side by side in one run: an empty kernel
// (one cube of one unit, no buffers), issued through client::launch with nothing observing, with a
// names-only observer, and with an observer asking for deferred (and resolved) timing.
//
// Two groups of rows:
// - issued: the issuing thread's CPU time per launch, the kernels left to run on the stream's
//   worker (the queue is drained every few thousand launches with the timer paused). What the
//   caller pays for a launch it does not wait for.
// - issued + completed: wall time per launch followed by a sync, the round trip to the worker and
//   back. What a launch costs when its result is needed at once.
// The summary after the table gives each row and its ratio to the idle row of its group.
//
//   launchwatch_launch_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <launchwatch/launchwatch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string_view>
#include <utility>
#include <vector>

#include "support/bench_summary.hpp"

namespace {

constexpr double min_time_s = 0.2;

/// Launches between two drains of the queue in the issued rows: enough to amortise the paused
/// timer's own cost, few enough that the queue never grows large.
constexpr std::int64_t drain_every = 2048;

/// The empty kernel.
struct nothing {
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit) const {}
};

/// Counts launches: the cheapest observer that still does something with each.
class names_only final : public launchwatch::launch_observer {
 public:
  void launched(std::string_view) override { count_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> count_{0};
};

/// Asks for `request` timing and keeps every deferred measurement unread, as an attribution
/// observer does until the pass is over.
class timing_observer final : public launchwatch::launch_observer {
 public:
  explicit timing_observer(launchwatch::timing_request request) : request_{request} {}
  void launched(std::string_view) override {}
  launchwatch::timing_request timing() const override { return request_; }
  void profiled(std::string_view, launchwatch::profile_duration profile) override {
    std::lock_guard lock{mutex_};
    kept_.push_back(std::move(profile));
  }
  void timed(std::string_view, std::chrono::nanoseconds, launchwatch::timing_method) override {}
  /// Reads what was kept, as the observer would once the pass is over, and forgets it.
  void read_kept() {
    std::vector<launchwatch::profile_duration> kept;
    {
      std::lock_guard lock{mutex_};
      kept.swap(kept_);
    }
    for (auto& profile : kept) benchmark::DoNotOptimize(std::move(profile).resolve());
  }

 private:
  launchwatch::timing_request request_;
  std::mutex mutex_;
  std::vector<launchwatch::profile_duration> kept_;
};

const auto counter = std::make_shared<names_only>();
const auto deferred = std::make_shared<timing_observer>(launchwatch::timing_request::deferred);
const auto resolved = std::make_shared<timing_observer>(launchwatch::timing_request::resolved);
std::optional<launchwatch::launch_observation> installed;
bool observer_missed_launches = false;

void install_counter(const benchmark::State&) { installed.emplace(counter); }
void install_deferred(const benchmark::State&) { installed.emplace(deferred); }
void install_resolved(const benchmark::State&) { installed.emplace(resolved); }
void drop_observer(const benchmark::State&) { installed.reset(); }

void bm_issued(benchmark::State& state) {
  auto client = launchwatch::client::cpu();
  client.sync();
  const auto before = counter->count();
  std::int64_t since_drain = 0;
  for (auto _ : state) {
    client.launch(nothing{}, launchwatch::cube_count{1u}, launchwatch::cube_dim{1u});
    if (++since_drain == drain_every) {
      state.PauseTiming();
      client.sync();
      deferred->read_kept();
      state.ResumeTiming();
      since_drain = 0;
    }
  }
  client.sync();
  deferred->read_kept();
  if (installed && counter->count() != before &&
      counter->count() - before != static_cast<std::uint64_t>(state.iterations())) {
    observer_missed_launches = true;
  }
}

void bm_completed(benchmark::State& state) {
  auto client = launchwatch::client::cpu();
  client.sync();
  std::int64_t since_drain = 0;
  for (auto _ : state) {
    client.launch(nothing{}, launchwatch::cube_count{1u}, launchwatch::cube_dim{1u});
    client.sync();
    if (++since_drain == drain_every) {
      state.PauseTiming();
      deferred->read_kept();
      state.ResumeTiming();
      since_drain = 0;
    }
  }
  deferred->read_kept();
}

BENCHMARK(bm_issued)->Name("issued/idle")->MinTime(min_time_s);
BENCHMARK(bm_issued)
    ->Name("issued/names_only")
    ->Setup(install_counter)
    ->Teardown(drop_observer)
    ->MinTime(min_time_s);
BENCHMARK(bm_issued)
    ->Name("issued/deferred")
    ->Setup(install_deferred)
    ->Teardown(drop_observer)
    ->MinTime(min_time_s);
BENCHMARK(bm_completed)->Name("completed/idle")->UseRealTime()->MinTime(min_time_s);
BENCHMARK(bm_completed)
    ->Name("completed/names_only")
    ->Setup(install_counter)
    ->Teardown(drop_observer)
    ->UseRealTime()
    ->MinTime(min_time_s);
BENCHMARK(bm_completed)
    ->Name("completed/deferred")
    ->Setup(install_deferred)
    ->Teardown(drop_observer)
    ->UseRealTime()
    ->MinTime(min_time_s);
BENCHMARK(bm_completed)
    ->Name("completed/resolved")
    ->Setup(install_resolved)
    ->Teardown(drop_observer)
    ->UseRealTime()
    ->MinTime(min_time_s);

namespace bench = launchwatch::bench;

constexpr bench::summary_row issued_rows[] = {
    {"issued/idle", 1, "idle"},
    {"issued/names_only", 1, "names_only"},
    {"issued/deferred", 1, "deferred"},
};

constexpr bench::summary_row completed_rows[] = {
    {"completed/idle", 1, "idle"},
    {"completed/names_only", 1, "names_only"},
    {"completed/deferred", 1, "deferred"},
    {"completed/resolved", 1, "resolved"},
};

/// A group's rows, each with its ratio to the group's idle row.
constexpr bench::row_layout group_layout(std::string_view idle) {
  return {.indent = 4,
          .label_width = 12,
          .time_width = 10,
          .time_precision = 1,
          .baseline = idle,
          .baseline_label = "idle"};
}

/// The summary printed after the console table: each row's time (CPU time for issued rows, wall
/// time for completed ones, which are registered with UseRealTime; the median when repetitions are
/// asked for) and its ratio to the idle row of its group.
void print_summary(std::ostream& out, const bench::run_collector& runs) {
  out << "\nSummary: per empty launch, and the ratio to the idle row of its group\n";
  out << "  issued (CPU time of the issuing thread)\n";
  bench::print_rows(out, runs, issued_rows, group_layout("issued/idle"));
  out << "  issued + completed (wall time, launch then sync)\n";
  bench::print_rows(out, runs, completed_rows, group_layout("completed/idle"));
  if (observer_missed_launches) {
    out << "\nFAILED: the names-only observer counted fewer launches than were issued.\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench::summary_reporter reporter{print_summary, bench::time_basis::as_registered};
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return observer_missed_launches ? 1 : 0;
}
