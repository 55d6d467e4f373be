// What attribution costs, measured side by side in one run: a scope with no attribution alive and
// with one, and a launch reported to a names-only observer and to an attribution, untimed and with
// deferred timing, from one thread and from several.
//
// Every row runs the loop of bench/core/observer_bench.cpp, `for (auto _ : state) { opaque(name);
// hook(name); }`, so a ratio between two rows is the hook's cost and not the harness's. Launch rows
// share one hook, the launch path of the runtime (src/runtime/client.cpp, client::issue, steps 4
// and 5) with an empty submission, and differ only in what is installed. The summary printed after
// the table gives CPU time per call (the median when --benchmark_repetitions is given) and the
// ratios between rows: CPU time, because this runs on machines shared with other work, where wall
// time also counts the time a thread waited for a core.
//
// An attribution keeps every launch until `collect`, so rows come in two kinds. "growing" rows let
// its storage grow for the whole run (one attribution per run, dropped after it; each run starts
// with the allocator's free memory handed back to the system and the thread's cache of attribution
// logs emptied), so they pay for fresh memory: chunk allocations and the page faults of first
// touching them (the faults_per_1k column counts them). The summary also says how much an ended
// growing attribution left allocated.
// "steady" rows call `collect()` every 4096 calls, so the storage is reused and memory stays
// bounded; "steady" rows pause the timer around `collect` (the price on the issuing thread),
// "steady, with collect" rows do not (collect's price spread over the launches it collects). Every
// attribution row checks, after its run, that the attribution recorded every call it made, under
// the scope path it was made in, with a measurement where one was asked for; the summary says
// FAILED otherwise. A reference row times one read of the clock attribution stamps with.
//
//   launchwatch_attribution_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>
#include <launchwatch/report/pass_record.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/resource.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "support/bench_summary.hpp"

namespace {

using launchwatch::attribution;
using launchwatch::attribution_options;
using launchwatch::launch_info;
using launchwatch::launch_observation;
using launchwatch::launch_observer;
using launchwatch::pass_record;
using launchwatch::profile_duration;
using launchwatch::timing_request;
namespace launch_path = launchwatch::launch_path;

// Long enough for a benchmark's median to settle, short enough that the whole run (nineteen
// benchmarks, five repetitions) stays around a minute on a two-core machine.
constexpr double min_time_s = 0.2;

// Calls between two collects in the steady rows: enough that the pause around collect is nothing
// per call, few enough that a pass's storage stays small (sixteen chunks of launches).
constexpr std::int64_t collect_every = 4096;

constexpr std::string_view kernel_name = "launchwatch_bench::saxpy<float>";
constexpr std::string_view scope_name = "attention";
// Launch rows run under these two scopes, entered once per thread before the loop.
constexpr std::string_view outer_scope_name = "model";
constexpr std::string_view inner_scope_name = "layer";
constexpr std::string_view launch_path_text = "model/layer";

// What the counting observer was told on this thread during the current run. Thread-local, so the
// names-only rows share no cache line between launching threads: a shared counter would make them
// contend on the observer's own state and hide what the observer core does with threads.
thread_local std::uint64_t launched_on_this_thread = 0;
thread_local std::uint64_t profiled_on_this_thread = 0;

/// Counts what it is told and nothing more, so the names-only rows measure the observer core and
/// not the observer. Asked for deferred timing, it counts each measurement and drops it unread: the
/// least an observer can do with one, so those rows price the timing path itself.
class counting_observer final : public launch_observer {
 public:
  explicit counting_observer(timing_request timing) : timing_{timing} {}

  void launched(std::string_view) override { ++launched_on_this_thread; }
  timing_request timing() const override { return timing_; }
  void profiled(std::string_view, profile_duration) override { ++profiled_on_this_thread; }

  /// Adds what this thread counted to the totals; each benchmark thread calls it after its loop.
  void add_this_threads_counts() noexcept {
    launched_.fetch_add(std::exchange(launched_on_this_thread, 0), std::memory_order_relaxed);
    profiled_.fetch_add(std::exchange(profiled_on_this_thread, 0), std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t launched_count() const noexcept {
    return launched_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t profiled_count() const noexcept {
    return profiled_.load(std::memory_order_relaxed);
  }

 private:
  const timing_request timing_;
  std::atomic<std::uint64_t> launched_{0};
  std::atomic<std::uint64_t> profiled_{0};
};

// What a run installed, made in its Setup and dropped in its Teardown: once per run, not per
// thread, so every thread of a threaded run reports to the same observer.
std::shared_ptr<counting_observer> counter;
std::shared_ptr<attribution> attribution_observer;
std::optional<launch_observation> installed;

// Calls the run's threads made, and what the attribution handed back for them.
std::atomic<std::uint64_t> issued{0};
std::atomic<std::uint64_t> collected{0};
// Launches a threaded run collected without their measurement, and measurements that arrived
// unpaired: a collect on one thread can fall between another thread's launch and its measurement.
std::atomic<std::uint64_t> untimed{0};
std::atomic<std::uint64_t> unpaired{0};
std::uint64_t unpaired_total = 0;

// Why a row's numbers do not measure what the row claims; printed in the summary, exit status 1.
std::mutex failures_mutex;
std::vector<std::string> failures;

void fail(std::string why) {
  std::lock_guard lock{failures_mutex};
  if (std::find(failures.begin(), failures.end(), why) == failures.end()) {
    failures.push_back(std::move(why));
  }
}

const char* timing_name(timing_request timing) {
  switch (timing) {
    case timing_request::none: return "none";
    case timing_request::resolved: return "resolved";
    case timing_request::deferred: return "deferred";
  }
  return "?";
}

/// Makes a name unknown to the compiler, as a launch path's or a caller's name is, while leaving it
/// in registers (benchmark::DoNotOptimize would force a string_view through memory).
inline void opaque(std::string_view& name) {
  const char* data = name.data();
  std::size_t size = name.size();
  asm volatile("" : "+r"(data), "+r"(size));
  name = std::string_view{data, size};
}

/// A launch as the runtime issues one (src/runtime/client.cpp, client::issue, steps 4 and 5), with
/// nothing submitted: the launch_info built only once an observer is known to be installed, then,
/// if the observer wants timing, a window bracketed by host time and handed over unread, as the
/// runtime does for a dry launch. Every launch row runs exactly this; rows differ in what is
/// installed.
inline void launch(std::string_view kernel) {
  if (launch_path::is_observing()) {
    launch_info info;
    info.kernel = kernel;
    info.stream = kernel.size();
    info.cube_count = {static_cast<std::uint32_t>(kernel.size()), 1, 1};
    info.cube_dim = {256, 1, 1};
    launch_path::notify_launch(info);
  }
  if (launch_path::timing_wanted()) {
    const auto start = std::chrono::steady_clock::now();
    // The submission would go here.
    const auto end = std::chrono::steady_clock::now();
    launch_path::notify_profiled(kernel, profile_duration::from_system_time(start, end));
  }
}

/// What a pass should hold, and checks that it does.
enum class expect { launches, scopes };

/// Collects what the installed attribution recorded and checks it against what the rows did:
/// every launch under model/layer (with a measurement under deferred timing, unless a collect on
/// another thread took it between the launch and its measurement), every scope interval of
/// `scope_name`. Adds what it found to `collected`.
void collect_and_check(expect what, timing_request timing) {
  const pass_record pass = attribution_observer->collect();
  if (what == expect::scopes) {
    std::uint64_t intervals = 0;
    for (const auto& thread : pass.threads) {
      intervals += thread.scopes.size();
      for (const auto& interval : thread.scopes) {
        if (pass.scope_path_text(interval.scope) != scope_name) {
          fail("a scope interval was recorded under `" + pass.scope_path_text(interval.scope) +
               "`, not `" + std::string{scope_name} + "`");
          break;
        }
      }
    }
    collected.fetch_add(intervals, std::memory_order_relaxed);
    return;
  }
  std::uint64_t without_timing = 0;
  for (const auto& launch : pass.launches) {
    if (!launch.scope || pass.scope_path_text(*launch.scope) != launch_path_text) {
      fail(std::string{"attribution ("} + timing_name(timing) + "): a launch was recorded " +
           (launch.scope ? "under `" + pass.scope_path_text(*launch.scope) + "`" : "outside any scope") +
           ", not under `" + std::string{launch_path_text} + "`");
      break;
    }
    if (timing == timing_request::deferred) {
      if (!launch.timing) {
        ++without_timing;
      } else if (!launch.timing->ticks ||
                 launch.timing->method != launchwatch::timing_method::system) {
        fail("attribution (deferred): a launch's measurement lost its ticks or its method");
        break;
      }
    } else if (launch.timing) {
      fail("attribution (none): a launch was timed although no timing was asked for");
      break;
    }
  }
  collected.fetch_add(pass.launches.size(), std::memory_order_relaxed);
  untimed.fetch_add(without_timing, std::memory_order_relaxed);
  unpaired.fetch_add(pass.lost.unpaired, std::memory_order_relaxed);
  if (pass.lost.empty != 0 || pass.lost.failed != 0) {
    fail("attribution: a system-time measurement was lost (empty or failed) in collect");
  }
}

// Setups and teardowns, one pair per kind of row.

void reset_counts() {
  issued.store(0);
  collected.store(0);
  untimed.store(0);
  unpaired.store(0);
}

template <timing_request Timing>
void install_counter(const benchmark::State&) {
  reset_counts();
  counter = std::make_shared<counting_observer>(Timing);
  installed.emplace(counter);
}

void drop_counter(const benchmark::State&) {
  installed.reset();
  const auto calls = issued.load();
  if (counter->launched_count() != calls) {
    fail("the names-only observer was told of fewer launches than were issued");
  }
  if (counter->timing() == timing_request::deferred && counter->profiled_count() != calls) {
    fail("the names-only observer asking deferred timing received fewer measurements than "
         "launches");
  }
  counter.reset();
}

/// Hands the memory earlier runs freed back to the system, so every attribution run starts as a
/// fresh process's first pass would: a growing row then pays for new memory (allocation and first
/// touch) whatever ran before it.
void return_free_memory() noexcept {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

/// Bytes the allocator has handed out and not had back; 0 where that cannot be asked.
std::size_t allocated_bytes() noexcept {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const auto info = mallinfo2();
  return info.uordblks + info.hblkhd;
#else
  return 0;
#endif
}

// Allocated when the last attribution run was set up, and what the longest growing run left
// allocated per launch once its attribution was destroyed (see drop_attribution).
std::size_t allocated_at_setup = 0;
std::uint64_t retained_from_launches = 0;
double retained_bytes_per_launch = 0;

/// Drops what the calling thread's cache of attribution logs still holds. The cache keeps a thread's
/// logs for its last four attributions, and a log keeps its attribution's storage, so an ended
/// attribution's storage stays allocated until four newer ones have pushed it out (or the thread
/// exits). Pushed out here by four throwaway attributions, each entering one scope on this thread,
/// so the next run starts without the last one's storage, whatever ran before it.
void flush_log_cache() {
  for (int i = 0; i < 4; ++i) {
    const attribution throwaway{attribution_options{}};
    const launchwatch::scope entered{"flush"};
  }
}

template <timing_request Timing>
void install_attribution(const benchmark::State&) {
  return_free_memory();
  allocated_at_setup = allocated_bytes();
  reset_counts();
  attribution_options options;
  options.timing = Timing;
  attribution_observer = std::make_shared<attribution>(options);
  installed.emplace(attribution_observer);
}

/// Whether a row lets the attribution's storage grow for the whole run.
enum class storage { growing, steady };

template <expect What, storage Storage = storage::steady>
void drop_attribution(const benchmark::State& state) {
  installed.reset();
  const auto timing = attribution_observer->timing();
  collect_and_check(What, timing);
  attribution_observer.reset();
  if (Storage == storage::growing && issued.load() != 0) {
    // What the destroyed attribution left allocated, per launch it recorded.
    const auto held = static_cast<double>(allocated_bytes()) -
                      static_cast<double>(allocated_at_setup);
    // From the longest run, where the fixed part (a first chunk, the log) weighs least.
    if (issued.load() > retained_from_launches) {
      retained_from_launches = issued.load();
      retained_bytes_per_launch = held / static_cast<double>(issued.load());
    }
  }
  flush_log_cache();
  const auto calls = issued.load();
  const auto got = collected.load();
  const std::string row = std::string{"attribution ("} + timing_name(timing) + "), " +
                          std::to_string(state.threads()) + " thread(s)";
  if (got != calls) {
    fail(row + ": collected " + std::to_string(got) + " " +
         (What == expect::scopes ? "scope intervals" : "launches") + " of " +
         std::to_string(calls) + " issued");
  }
  // A measurement goes either to its launch or, if a collect took the launch first, to the
  // unpaired count; anything else is lost without a trace.
  if (untimed.load() != unpaired.load()) {
    fail(row + ": " + std::to_string(untimed.load()) + " launches without a measurement but " +
         std::to_string(unpaired.load()) + " measurements unpaired");
  }
  unpaired_total += unpaired.load();
}

/// How a row's loop collects.
enum class collecting {
  never,   ///< Not in the loop (a growing row, or no attribution).
  paused,  ///< Every collect_every calls, with the timer paused.
  timed,   ///< Every collect_every calls, timed with the calls.
};

/// The loop every row shares: the name made opaque, then the hook under test; a collecting row also
/// counts down to its next collect (a decrement and a branch not taken, next to tens of
/// nanoseconds of hook).
template <class Hook>
void run_loop(benchmark::State& state, std::string_view name, Hook hook,
              collecting how = collecting::never, expect what = expect::launches) {
  if (how == collecting::never) {
    for (auto _ : state) {
      opaque(name);
      hook(name);
    }
  } else {
    const auto timing = attribution_observer->timing();
    std::int64_t until_collect = collect_every;
    for (auto _ : state) {
      opaque(name);
      hook(name);
      if (--until_collect == 0) [[unlikely]] {
        until_collect = collect_every;
        if (how == collecting::paused) state.PauseTiming();
        collect_and_check(what, timing);
        if (how == collecting::paused) state.ResumeTiming();
      }
    }
  }
  issued.fetch_add(static_cast<std::uint64_t>(state.iterations()), std::memory_order_relaxed);
}

/// Skips a row that would time another path under its name: an idle row that found an observer or
/// an attribution alive, or an observed row that found none.
bool in_expected_state(benchmark::State& state, bool observing, bool attribution_alive) {
  if (launch_path::is_observing() != observing ||
      launchwatch::detail::attributing.load(std::memory_order_relaxed) != attribution_alive) {
    state.SkipWithError("the observer slot or the attribution flag is not in the state this row "
                        "measures");
    return false;
  }
  return true;
}

/// Minor page faults the calling thread has taken so far: each is the kernel handing a page of
/// fresh memory over on first touch, which a growing row pays and a steady row should not.
std::int64_t minor_faults_of_this_thread() noexcept {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_minflt;
}

/// Reports the faults a thread took during its loop, per 1000 calls, as a column of the table.
void report_faults(benchmark::State& state, std::int64_t before) {
  state.counters["faults_per_1k"] = benchmark::Counter(
      static_cast<double>(minor_faults_of_this_thread() - before) * 1000.0,
      benchmark::Counter::kAvgIterations);
}

// References.

/// One read of the clock an attribution stamps launches and scopes with: recording a launch reads
/// it once (twice with deferred timing, where the launch path also brackets the launch with it),
/// a scope twice.
void bm_clock_read(benchmark::State& state) {
  run_loop(state, scope_name, [](std::string_view) {
    auto now = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(now);
  });
}

// Scopes.

void bm_empty_loop(benchmark::State& state) {
  if (!in_expected_state(state, false, false)) return;
  run_loop(state, scope_name, [](std::string_view) {});
}

void bm_scope_idle(benchmark::State& state) {
  if (!in_expected_state(state, false, false)) return;
  run_loop(state, scope_name, [](std::string_view name) { launchwatch::scope s{name}; });
}

void bm_scope_attributing(benchmark::State& state) {
  if (!in_expected_state(state, true, true)) return;
  run_loop(
      state, scope_name, [](std::string_view name) { launchwatch::scope s{name}; },
      collecting::paused, expect::scopes);
}

// Launches, each under two nested scopes entered once by each thread.

template <collecting How>
void bm_launch(benchmark::State& state) {
  const bool observing = installed.has_value();
  if (!in_expected_state(state, observing, attribution_observer != nullptr)) return;
  launched_on_this_thread = 0;
  profiled_on_this_thread = 0;
  const auto faults_before = minor_faults_of_this_thread();
  {
    const launchwatch::scope outer{outer_scope_name};
    const launchwatch::scope inner{inner_scope_name};
    run_loop(state, kernel_name, launch, How, expect::launches);
  }
  report_faults(state, faults_before);
  if (counter) counter->add_this_threads_counts();
}

BENCHMARK(bm_empty_loop)->MinTime(min_time_s);
BENCHMARK(bm_clock_read)->MinTime(min_time_s);
BENCHMARK(bm_scope_idle)->MinTime(min_time_s);
BENCHMARK(bm_scope_attributing)
    ->Setup(install_attribution<timing_request::none>)
    ->Teardown(drop_attribution<expect::scopes>)
    ->MinTime(min_time_s);

BENCHMARK(bm_launch<collecting::never>)->Name("bm_launch_idle")->MinTime(min_time_s);
BENCHMARK(bm_launch<collecting::never>)
    ->Name("bm_launch_names_only")
    ->Setup(install_counter<timing_request::none>)
    ->Teardown(drop_counter)
    ->MinTime(min_time_s);
BENCHMARK(bm_launch<collecting::never>)
    ->Name("bm_launch_attribution_none_growing")
    ->Setup(install_attribution<timing_request::none>)
    ->Teardown(drop_attribution<expect::launches, storage::growing>)
    ->MinTime(min_time_s);
BENCHMARK(bm_launch<collecting::paused>)
    ->Name("bm_launch_attribution_none_steady")
    ->Setup(install_attribution<timing_request::none>)
    ->Teardown(drop_attribution<expect::launches>)
    ->MinTime(min_time_s);
BENCHMARK(bm_launch<collecting::timed>)
    ->Name("bm_launch_attribution_none_steady_with_collect")
    ->Setup(install_attribution<timing_request::none>)
    ->Teardown(drop_attribution<expect::launches>)
    ->MinTime(min_time_s);

BENCHMARK(bm_launch<collecting::never>)
    ->Name("bm_launch_names_only_deferred")
    ->Setup(install_counter<timing_request::deferred>)
    ->Teardown(drop_counter)
    ->MinTime(min_time_s)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4);
BENCHMARK(bm_launch<collecting::never>)
    ->Name("bm_launch_attribution_deferred_growing")
    ->Setup(install_attribution<timing_request::deferred>)
    ->Teardown(drop_attribution<expect::launches, storage::growing>)
    ->MinTime(min_time_s);
BENCHMARK(bm_launch<collecting::paused>)
    ->Name("bm_launch_attribution_deferred_steady")
    ->Setup(install_attribution<timing_request::deferred>)
    ->Teardown(drop_attribution<expect::launches>)
    ->MinTime(min_time_s)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4);
BENCHMARK(bm_launch<collecting::timed>)
    ->Name("bm_launch_attribution_deferred_steady_with_collect")
    ->Setup(install_attribution<timing_request::deferred>)
    ->Teardown(drop_attribution<expect::launches>)
    ->MinTime(min_time_s);

namespace bench = launchwatch::bench;

constexpr bench::summary_row summary_rows[] = {
    {"bm_empty_loop", 1, "empty loop"},
    {"bm_clock_read", 1, "steady_clock::now(), one read"},
    {"bm_scope_idle", 1, "scope, no attribution alive"},
    {"bm_scope_attributing", 1, "scope, attribution alive (steady)"},
    {"bm_launch_idle", 1, "launch, nothing installed"},
    {"bm_launch_names_only", 1, "launch, names-only observer"},
    {"bm_launch_attribution_none_growing", 1, "launch, attribution (none), growing"},
    {"bm_launch_attribution_none_steady", 1, "launch, attribution (none), steady"},
    {"bm_launch_attribution_none_steady_with_collect", 1,
     "launch, attribution (none), steady, with collect"},
    {"bm_launch_names_only_deferred", 1, "launch, names-only observer, deferred"},
    {"bm_launch_attribution_deferred_growing", 1, "launch, attribution (deferred), growing"},
    {"bm_launch_attribution_deferred_steady", 1, "launch, attribution (deferred), steady"},
    {"bm_launch_attribution_deferred_steady_with_collect", 1,
     "launch, attribution (deferred), steady, with collect"},
    {"bm_launch_names_only_deferred", 2, "launch, names-only observer, deferred, 2 threads"},
    {"bm_launch_names_only_deferred", 4, "launch, names-only observer, deferred, 4 threads"},
    {"bm_launch_attribution_deferred_steady", 2,
     "launch, attribution (deferred), steady, 2 threads"},
    {"bm_launch_attribution_deferred_steady", 4,
     "launch, attribution (deferred), steady, 4 threads"},
};

constexpr bench::summary_ratio summary_ratios[] = {
    {"scope, no attribution / empty loop", "bm_scope_idle", 1, "bm_empty_loop", 1},
    {"scope, attribution alive / no attribution", "bm_scope_attributing", 1, "bm_scope_idle", 1},
    {"launch, nothing installed / empty loop", "bm_launch_idle", 1, "bm_empty_loop", 1},
    {"attribution (none), growing / names-only", "bm_launch_attribution_none_growing", 1,
     "bm_launch_names_only", 1},
    {"attribution (none), steady / names-only", "bm_launch_attribution_none_steady", 1,
     "bm_launch_names_only", 1},
    {"attribution (none), with collect / steady", "bm_launch_attribution_none_steady_with_collect",
     1, "bm_launch_attribution_none_steady", 1},
    {"names-only, deferred / names-only", "bm_launch_names_only_deferred", 1,
     "bm_launch_names_only", 1},
    {"attribution (deferred), growing / names-only, deferred",
     "bm_launch_attribution_deferred_growing", 1, "bm_launch_names_only_deferred", 1},
    {"attribution (deferred), steady / names-only, deferred",
     "bm_launch_attribution_deferred_steady", 1, "bm_launch_names_only_deferred", 1},
    {"attribution (deferred), with collect / steady",
     "bm_launch_attribution_deferred_steady_with_collect", 1,
     "bm_launch_attribution_deferred_steady", 1},
    {"names-only, deferred, 2 threads / 1 thread (per call)", "bm_launch_names_only_deferred", 2,
     "bm_launch_names_only_deferred", 1},
    {"names-only, deferred, 4 threads / 1 thread (per call)", "bm_launch_names_only_deferred", 4,
     "bm_launch_names_only_deferred", 1},
    {"attribution (deferred), 2 threads / 1 thread (per call)",
     "bm_launch_attribution_deferred_steady", 2, "bm_launch_attribution_deferred_steady", 1},
    {"attribution (deferred), 4 threads / 1 thread (per call)",
     "bm_launch_attribution_deferred_steady", 4, "bm_launch_attribution_deferred_steady", 1},
};

/// The summary printed after the console table: every row's time and page faults, the ratios
/// between rows, what growing runs left allocated and what threaded runs lost to a collect, then
/// the rows that do not measure what they claim.
void print_summary(std::ostream& out, const bench::run_collector& runs) {
  out << "\nSummary: CPU time per call (median of the repetitions), and ratios between rows\n";
  out << "(and minor page faults per 1000 calls, where a row counts them)\n";
  bench::print_rows(out, runs, summary_rows,
                    {.label_width = 60,
                     .time_width = 9,
                     .counter = "faults_per_1k",
                     .counter_unit = "faults/1k"});
  out << '\n';
  bench::print_ratios(out, runs, summary_ratios, 60);
  if (retained_bytes_per_launch > 0) {
    bench::print(out,
                 "\n  A growing run's attribution, once destroyed, still left %.0f bytes a launch "
                 "allocated:\n  its storage, kept by the issuing thread's cache of attribution logs "
                 "until four newer\n  attributions push it out (flushed after each run here).\n",
                 retained_bytes_per_launch);
  }
  if (unpaired_total != 0) {
    bench::print(out,
                 "\n  %llu deferred measurements arrived after a collect on another thread had "
                 "taken their launch:\n  those launches were collected untimed and the "
                 "measurements counted in pass_record::lost.unpaired.\n",
                 static_cast<unsigned long long>(unpaired_total));
  }
  if (!failures.empty()) {
    out << "\nFAILED: rows that do not measure what they claim:\n";
    for (const auto& why : failures) out << "  - " << why << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // glibc raises its mmap and trim thresholds as a process frees large blocks, so whether a pass's
  // tables come from fresh pages or reused ones would depend on which rows ran before. Fixed here at
  // the values that adjustment ends at in a long-running process (32 MiB and twice that on 64-bit).
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench::summary_reporter reporter{print_summary};
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return failures.empty() ? 0 : 1;
}
