// What the CUDA bridge's own deferred timing costs a launch, on the CPU (issue 24): the bridge's
// core (bridge_core.hpp) driven the way CUPTI drives it, with nothing of CUDA's or CUPTI's own cost
// in the way, so deferred minus names-only is launchwatch's deferred-specific work alone: what the
// launching thread does for it, and what the record-delivering threads do to it.
//
// The device is a fake CUPTI after tests/cuda_bridge/fake_cupti.hpp, with the bench's own
// submission path: a launch's ENTER and EXIT callbacks run on the launching thread around its
// "submission", which hands the correlation id to the device through a lock-free ring (the fake's
// map lookups and lock per launch would be in both rows, and contend with the flushes); a device
// thread turns submitted launches into kernel records and hands each full buffer (8 192 records,
// about CUPTI's 2 MiB) over on its own thread, as CUPTI's buffer-completed callback does, and a
// flush (the collector's every 10 ms, or a reader's) hands over the partial one on the flushing
// thread, as cuptiActivityFlushAll does. Under names-only the records are made and discarded, as
// under "CUPTI floor" in cuda_bridge_bench.cu; under deferred they go to the core's table.
//
// Rows, interleaved round by round, each round a fresh core and a fresh observer:
//   names, counted    an observer counting launches (cuda_bridge_bench.cu's "names only" row)
//   deferred, kept    an observer keeping every measurement unread, read after the loop (its
//                     "deferred" row, whose excess over CUPTI's floor issue 24 is about)
//   names, run        the attribution `launchwatch run --timing none` installs (aggregate-only),
//                     its trace prefix full: a long job's steady state, once its first 250 000
//                     launches have filled the prefix of run's default --trace-events
//   deferred, run     the attribution `launchwatch run` installs (deferred, aggregate-only: every
//                     4 096 launches a thread's measurements are read, on the launching thread),
//                     likewise
//   names, run, prefix    the same two while the trace prefix has room, as for a job's first
//   deferred, run, prefix 250 000 launches (each launch takes room, and is copied at its fold)
// Medians over rounds of nanoseconds per launch, and each deferred row minus the names-only row
// above it, paired round by round; beside them, the launching thread's own CPU time per launch
// (its wall time less the time it was not running: on a machine with fewer cores than busy
// threads, the fold and device threads take turns with it).
//
// Usage: launchwatch_cuda_bridge_core_bench [launches per row, default 200000] [rounds, default 15]
//        [submission ns, default 0: busy time between ENTER and EXIT, standing in for the driver]
//        [only this row, 0-5, for a profiler; default all; -1 all]
//        [fold: auto, thread or inline; default auto: run's rule, a fold thread where the process
//         may run on 4 cores (attribute/fold_thread.hpp); thread or inline force it, so either way
//         can be measured on any machine]
//        [launches per scope, default 0: none; K puts every K launches in a scope of their own,
//         three names in turn, under two scopes open through the loop, as a module's hooks do
//         (ResNet-18's step: a scope entered and left for every 1-3 kernels, issue 22)]
//        [distinct kernels and scope names, default 1 (3 scope names): K cycles the launches over
//         K kernel symbols, each its own string as a library's kernels are, and the scopes over K
//         names, as a real model's step does (ResNet-18's: about 100 of each); 1 is one kernel
//         launched again and again, which every thread-local cache holds]
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <malloc.h>
#include <time.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/observe.hpp>

#include "attribute/fold_thread.hpp"
#include "cuda_bridge/bridge_core.hpp"
#include "support/launch_observers.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using launchwatch::detail::cuda_bridge::bridge_core;
using launchwatch::detail::cuda_bridge::kernel_record;

std::uint64_t now_nanoseconds() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
          .count());
}

/// The fake CUPTI and device (see the top of the file). Launches come from one thread.
class bench_cupti final : public launchwatch::detail::cuda_bridge::bridge_device {
 public:
  /// `to_core`: records reach the core's table; otherwise they are made and discarded.
  bench_cupti(const launchwatch::cuda_bridge_options& options, bool to_core)
      : to_core_{to_core}, core_{options, *this, [this](bool) { flush(); }} {
    core_.every_capture_seen();  // as under `launchwatch run`, which subscribes inside cuInit
    core_.start_collecting();
    buffer_.reserve(buffer_records);
    device_ = std::thread{[this] { run_device(); }};
  }
  ~bench_cupti() {
    stop_.store(true);
    device_.join();
    core_.close();
  }
  bench_cupti(const bench_cupti&) = delete;
  bench_cupti& operator=(const bench_cupti&) = delete;

  bridge_core& core() noexcept { return core_; }

  /// cuLaunchKernel of an empty kernel named `symbol`: ENTER, `submission` of busy time and the
  /// kernel handed to the device, EXIT.
  void launch(std::chrono::nanoseconds submission, const char* symbol) {
    launchwatch::detail::cuda_bridge::launch_call call;
    call.correlation = ++next_correlation_;
    call.symbol = symbol;
    call.context = &context_;
    call.stream = &stream_;
    call.stream_number = 13;
    if (bridge_core::wants_launch_enter()) core_.launch_entered(call);
    if (submission.count() > 0) {
      const auto until = clock_type::now() + submission;
      while (clock_type::now() < until) {
      }
    }
    submit(call.correlation);
    if (bridge_core::wants_launch_exit()) core_.launch_exited(call);
  }

  /// After the loop, as cuda_bridge::flush does: every awaited record delivered.
  void deliver_pending() { core_.deliver_pending(std::chrono::seconds{10}); }

  // bridge_device
  int device_of(void*) noexcept override { return 0; }
  bool capturing(void*) noexcept override { return false; }
  bool kernel_records_on() noexcept override { return true; }
  bool kernel_records_off() noexcept override { return true; }
  bool open_window(void*, void*) noexcept override { return false; }
  std::optional<launchwatch::profile_duration> close_window(void*) override { return {}; }
  std::optional<launchwatch::detail::cuda_bridge::kernel_node> describe_kernel_node(
      const void*) noexcept override {
    return std::nullopt;
  }

 private:
  static constexpr std::size_t ring_size = std::size_t{1} << 16;
  /// About what CUPTI's 2 MiB buffer holds (activity_buffers.cpp).
  static constexpr std::size_t buffer_records = 8192;

  /// The kernel goes to the device: a slot of the ring and a release store, no lock.
  void submit(std::uint32_t correlation) {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    while (tail - head_.load(std::memory_order_acquire) >= ring_size) std::this_thread::yield();
    ring_[tail & (ring_size - 1)] = correlation;
    tail_.store(tail + 1, std::memory_order_release);
  }

  /// Moves what was submitted into the buffer, each kernel run just now (buffer_mutex_ held).
  void drain_locked() {
    const std::uint64_t tail = tail_.load(std::memory_order_acquire);
    std::uint64_t head = head_.load(std::memory_order_relaxed);
    const std::uint64_t end = now_nanoseconds();
    for (; head != tail; ++head) {
      buffer_.push_back(kernel_record{ring_[head & (ring_size - 1)], 0, 0, 13, end - 1000, end});
    }
    head_.store(head, std::memory_order_release);
  }

  void deliver(std::vector<kernel_record>& records) {
    if (to_core_ && !records.empty()) core_.records()->on_records(records, 0);
    records.clear();
  }

  /// cuptiActivityFlushAll(0): the partial buffer, handed over on the flushing thread.
  void flush() {
    std::vector<kernel_record> handed;
    handed.reserve(buffer_records);
    {
      std::lock_guard lock{buffer_mutex_};
      drain_locked();
      handed.swap(buffer_);
    }
    deliver(handed);
  }

  /// The device and CUPTI's own thread: kernels complete within tens of microseconds of their
  /// submission; a full buffer is handed over here.
  void run_device() {
    std::vector<kernel_record> full;
    full.reserve(buffer_records);
    while (!stop_.load()) {
      std::this_thread::sleep_for(std::chrono::microseconds{20});
      {
        std::lock_guard lock{buffer_mutex_};
        drain_locked();
        if (buffer_.size() >= buffer_records) full.swap(buffer_);
      }
      deliver(full);
    }
  }

  const bool to_core_;
  int context_ = 0;
  int stream_ = 0;
  std::uint32_t next_correlation_ = 0;
  std::array<std::uint32_t, ring_size> ring_{};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::mutex buffer_mutex_;
  std::vector<kernel_record> buffer_;
  std::atomic<bool> stop_{false};
  bridge_core core_;
  std::thread device_;
};

/// What `launchwatch run` installs (run_session.hpp's session_attribution_options), its trace
/// prefix with room (`prefix_room`) or already full.
launchwatch::attribution_options run_options(launchwatch::timing_request timing, bool prefix_room) {
  launchwatch::attribution_options options;
  options.timing = timing;
  options.aggregate_only = true;
  options.trace_prefix_events = prefix_room ? 1'000'000 : 0;
  return options;
}

/// And the bridge it makes (run_session.cpp): replays per node whenever it times.
launchwatch::cuda_bridge_options run_bridge(launchwatch::timing_request timing) {
  launchwatch::cuda_bridge_options options;
  if (timing != launchwatch::timing_request::none) {
    options.graph_replays = launchwatch::cuda_graph_replays::per_node;
  }
  return options;
}

/// What a row's rounds measured (wall and the launching thread's CPU time, ns per launch) and the
/// records it saw.
struct row {
  std::vector<double> ns;
  std::vector<double> cpu_ns;
  std::uint64_t delivered = 0;
  std::uint64_t missing = 0;
};

double thread_cpu_ns() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

/// Every K launches in a scope of their own (0: none), from main's arguments.
int launches_per_scope = 0;

/// The kernel symbols launches cycle over and the scope names scopes do (main's arguments say how
/// many): each its own allocation, so no two share an address or a cache line's neighbourhood by
/// construction.
std::vector<std::unique_ptr<std::string>> kernel_symbols;
std::vector<std::unique_ptr<std::string>> scope_names;

void make_names(int distinct) {
  for (int i = 0; i < distinct; ++i) {
    kernel_symbols.push_back(std::make_unique<std::string>(
        distinct == 1 ? std::string{"_Z12empty_kernelv"}
                      : "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_" +
                            std::to_string(i) + "EEvi"));
  }
  const std::array<std::string_view, 3> modules{"conv1", "bn1", "relu"};
  for (int i = 0; i < std::max(distinct, 3); ++i) {
    scope_names.push_back(std::make_unique<std::string>(
        distinct == 1 ? std::string{modules[static_cast<std::size_t>(i)]}
                      : "module" + std::to_string(i)));
  }
}

const char* symbol_of(std::size_t launch) {
  return kernel_symbols[launch % kernel_symbols.size()]->c_str();
}

/// `count` launches in a scope entered and left around them, as a module's forward hooks do.
[[gnu::noinline]] void scoped_launches(bench_cupti& cupti, int first, int count, int group,
                                       std::chrono::nanoseconds submission) {
  const launchwatch::scope module{
      *scope_names[static_cast<std::size_t>(group) % scope_names.size()]};
  for (int i = first; i < first + count; ++i) {
    cupti.launch(submission, symbol_of(static_cast<std::size_t>(i)));
  }
}

// Not inlined, so a profiler can tell the loop from the rest of a round.
[[gnu::noinline]] void loop(bench_cupti& cupti, int launches, std::chrono::nanoseconds submission,
                            row& into) {
  const double cpu_start = thread_cpu_ns();
  const auto start = clock_type::now();
  if (launches_per_scope <= 0) {
    for (int i = 0; i < launches; ++i) {
      cupti.launch(submission, symbol_of(static_cast<std::size_t>(i)));
    }
  } else {
    const launchwatch::scope model{"ResNet"};
    const launchwatch::scope layer{"layer1"};
    for (int i = 0, group = 0; i < launches; i += launches_per_scope, ++group) {
      scoped_launches(cupti, i, std::min(launches_per_scope, launches - i), group, submission);
    }
  }
  const auto end = clock_type::now();
  into.cpu_ns.push_back((thread_cpu_ns() - cpu_start) / launches);
  into.ns.push_back(std::chrono::duration<double, std::nano>(end - start).count() / launches);
}

/// One round of an attribution row: the loop timed, then the report read as the run's is.
void attribution_round(launchwatch::timing_request timing, bool prefix_room, int launches,
                       std::chrono::nanoseconds submission, row& into) {
  const bool timed = timing != launchwatch::timing_request::none;
  bench_cupti cupti{run_bridge(timing), timed};
  auto observer = std::make_shared<launchwatch::attribution>(run_options(timing, prefix_room));
  {
    launchwatch::launch_observation watching{observer};
    loop(cupti, launches, submission, into);
  }
  cupti.deliver_pending();
  (void)observer->collect_bounded();
  const auto stats = cupti.core().stats();
  into.delivered += stats.measurements_delivered;
  into.missing += stats.measurements_missing;
}

void counted_round(int launches, std::chrono::nanoseconds submission, row& into) {
  bench_cupti cupti{run_bridge(launchwatch::timing_request::none), false};
  auto observer = std::make_shared<launchwatch::bench::names_only>();
  launchwatch::launch_observation watching{observer};
  loop(cupti, launches, submission, into);
}

void kept_round(int launches, std::chrono::nanoseconds submission, row& into) {
  bench_cupti cupti{run_bridge(launchwatch::timing_request::deferred), true};
  auto observer =
      std::make_shared<launchwatch::bench::keeps_unread_locked>(static_cast<std::size_t>(launches));
  observer->touch_storage();
  {
    launchwatch::launch_observation watching{observer};
    loop(cupti, launches, submission, into);
  }
  cupti.deliver_pending();
  for (auto& profile : observer->kept_) {
    if (std::move(profile).resolve()) {
      ++into.delivered;
    } else {
      ++into.missing;
    }
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// The median of `a` minus `b`, round by round, signed, to a tenth.
std::string median_difference(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> deltas;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) deltas.push_back(a[i] - b[i]);
  if (deltas.empty()) return {};
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f", median(deltas));
  return text;
}

std::string fmt_ns(double ns) {
  char text[24];
  std::snprintf(text, sizeof text, " %.0f", ns);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 200000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  const std::chrono::nanoseconds submission{argc > 3 ? std::atoll(argv[3]) : 0};
  const int only = argc > 4 ? std::atoi(argv[4]) : -1;
  const std::string fold = argc > 5 ? argv[5] : "auto";
  launches_per_scope = argc > 6 ? std::atoi(argv[6]) : 0;
  const int distinct = argc > 7 ? std::atoi(argv[7]) : 1;
  if (launches <= 0 || rounds <= 0 || launches_per_scope < 0 || distinct <= 0 ||
      (fold != "auto" && fold != "thread" && fold != "inline")) {
    std::fprintf(stderr,
                 "usage: %s [launches per row] [rounds] [submission ns] [only row, -1 all] "
                 "[fold: auto|thread|inline] [launches per scope, 0 none] "
                 "[distinct kernels and scope names, >= 1]\n",
                 argv[0]);
    return 2;
  }
  if (fold != "auto") launchwatch::detail::fold_thread::decide_for_testing(fold == "thread");
  make_names(distinct);
  // Pairs: a deferred row and the names-only row it is compared with.
  constexpr int row_count = 6;
  // Freed memory stays with the process: a row's first touches of pages another row freed are the
  // allocator's and the kernel's cost, not the bridge's (page faults are dear on a virtual
  // machine).
  (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const char* const names[row_count] = {"names, counted",     "deferred, kept",
                                        "names, run",         "deferred, run",
                                        "names, run, prefix", "deferred, run, prefix"};
  std::map<std::string, row> rows;
  // A warm-up round of each, unmeasured: first-touch pages, the symbol tables.
  {
    row ignored;
    attribution_round(launchwatch::timing_request::none, true, launches / 4, submission, ignored);
    attribution_round(launchwatch::timing_request::deferred, true, launches / 4, submission,
                      ignored);
  }
  for (int r = 0; r < rounds; ++r) {
    // Each round starts with another row, so no row always follows the same one.
    for (int i = 0; i < row_count; ++i) {
      const int which = (r + i) % row_count;
      if (only >= 0 && which != only) continue;
      row& into = rows[names[which]];
      if (which == 0) {
        counted_round(launches, submission, into);
      } else if (which == 1) {
        kept_round(launches, submission, into);
      } else {
        const auto timing = which % 2 == 0 ? launchwatch::timing_request::none
                                           : launchwatch::timing_request::deferred;
        attribution_round(timing, /*prefix_room=*/which >= 4, launches, submission, into);
      }
    }
  }
  std::printf(
      "CUDA bridge core on the CPU (fake CUPTI), host ns per launch, %d launches x %d "
      "rounds, %lld ns of submission, run's fold %s, %s (medians)\n\n",
      launches, rounds, static_cast<long long>(submission.count()),
      fold == "auto"     ? "as run decides"
      : fold == "thread" ? "on a thread"
                         : "inline",
      launches_per_scope == 0
          ? "no scope"
          : ("a scope every " + std::to_string(launches_per_scope) + " launches").c_str());
  std::printf("%-22s %10s %12s %10s %12s %12s %10s  %s\n", "row", "ns/launch", "minus names",
              "cpu ns", "cpu - names", "delivered", "missing", "per round");
  for (int which = 0; which < row_count; ++which) {
    const row& of = rows[names[which]];
    if (of.ns.empty()) continue;
    // A deferred row minus its names-only row (the one before it), round by round.
    std::string delta;
    std::string cpu_delta;
    if (which % 2 == 1 && !rows[names[which - 1]].ns.empty()) {
      const row& names_only = rows[names[which - 1]];
      delta = median_difference(of.ns, names_only.ns);
      cpu_delta = median_difference(of.cpu_ns, names_only.cpu_ns);
    }
    std::string each;
    for (const double ns : of.ns) each += fmt_ns(ns);
    std::printf("%-22s %10.1f %12s %10.1f %12s %12llu %10llu %s\n", names[which], median(of.ns),
                delta.c_str(), median(of.cpu_ns), cpu_delta.c_str(),
                static_cast<unsigned long long>(of.delivered),
                static_cast<unsigned long long>(of.missing), each.c_str());
  }
  return 0;
}
