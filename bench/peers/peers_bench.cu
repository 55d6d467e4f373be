// launchwatch against what a user would pick instead, on one GPU, in one run.
//
// Three questions, each answered by cases run interleaved (round-robin, repeated) so that a drift
// of the machine lands on every case alike:
//   1. What does observing a launch cost the host? Empty kernels, N per batch, pipeline full: raw
//      cudaLaunchKernel; launchwatch idle, with a names-only observer, with the attribution
//      observer, with deferred and resolved timing; and the peers on raw launches: NVTX ranges with
//      no tool attached, CUDA events around each launch, a CUPTI callback subscriber, CUPTI
//      concurrent-kernel activity tracing.
//   2. What does timing do to the device's pass? Back-to-back spin kernels of about 5 and 50 µs,
//      pass wall time under each way of timing against untimed.
//   3. How true are the timings? launchwatch's deferred windows and CUDA events against CUPTI's
//      activity records of the same kernels, kernel by kernel, launch-bound and device-bound, and
//      the device idle time each side's timestamps give.
//
// Usage: launchwatch_peers_bench [--rounds R] [--launches N] [--json FILE] [--max-seconds S]
//                                [--keep-cupti-attached] [--one-phase]
//   --keep-cupti-attached  no cuptiFinalize after the CUPTI cases (CUPTI stays loaded, as under a
//                          profiler that traces for the whole run)
//   --one-phase            every launch-cost case in one interleaved set, CUPTI's included, after
//                          raw launches timed once before CUPTI is first called
// Without a visible CUDA device it says so and exits 0, so scripts need no GPU check of their own.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/summary.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/runtime/client.hpp>
#include <launchwatch/errors.hpp>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "analysis.hpp"
#include "cupti_peers.hpp"
#include "results.hpp"

namespace launchwatch::peers {
namespace {

using clock_type = std::chrono::steady_clock;

// What the harness is doing now, for the watchdog's message if the run hangs.
std::atomic<const char*> current_step{"starting"};

double ns_between(clock_type::time_point from, clock_type::time_point to) {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error{std::string{call} + " failed: " + cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status)};
  }
}

// ---------------------------------------------------------------------------------------------
// Kernels. Distinct names on each side, so CUPTI's records can be told apart by name alone.

__device__ __forceinline__ std::uint64_t device_now_ns() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)::"memory");
  return now;
}

// Spins on the device's nanosecond clock: the kernel's length is set by the clock, not by an
// instruction count that would change with the SM clock. The host branch exists only so the same
// kernel type is valid on the CPU backend; the harness never runs it there.
LAUNCHWATCH_HOST_DEVICE inline void spin_for(std::uint64_t ns) {
#if defined(__CUDA_ARCH__)
  const std::uint64_t start = device_now_ns();
  while (device_now_ns() - start < ns) {
  }
#else
  const auto until = clock_type::now() + std::chrono::nanoseconds{ns};
  while (clock_type::now() < until) {
  }
#endif
}

struct lw_empty_kernel {
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit) const {}
};

struct lw_spin_kernel {
  std::uint64_t ns;
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit) const { spin_for(ns); }
};

struct lw_blocker_kernel {
  std::uint64_t ns;
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit) const { spin_for(ns); }
};

__global__ void raw_empty_kernel() {}
__global__ void raw_spin_kernel(std::uint64_t ns) { spin_for(ns); }
__global__ void raw_blocker_kernel(std::uint64_t ns) { spin_for(ns); }

// Every case launches one block of one warp: the smallest launch that is still a real kernel.
constexpr unsigned block_threads = 32;

inline cudaError_t launch_raw_empty(cudaStream_t stream) {
  return cudaLaunchKernel(reinterpret_cast<const void*>(&raw_empty_kernel), dim3{1},
                          dim3{block_threads}, nullptr, 0, stream);
}

inline cudaError_t launch_raw_spin(cudaStream_t stream, std::uint64_t ns) {
  void* args[] = {&ns};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&raw_spin_kernel), dim3{1},
                          dim3{block_threads}, args, 0, stream);
}

inline cudaError_t launch_raw_blocker(cudaStream_t stream, std::uint64_t ns) {
  void* args[] = {&ns};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&raw_blocker_kernel), dim3{1},
                          dim3{block_threads}, args, 0, stream);
}

// ---------------------------------------------------------------------------------------------
// Observers a user would write against the contract.

// Counts launches by name: the cheapest thing an observer can do.
class names_only_observer final : public launch_observer {
 public:
  void launched(std::string_view kernel) override {
    last_ = kernel.data();
    ++count_;
  }
  std::uint64_t take_count() noexcept { return std::exchange(count_, 0); }

 private:
  std::uint64_t count_ = 0;
  const char* volatile last_ = nullptr;
};

// Keeps every measurement unread and reads them once the batch is over.
class deferred_observer final : public launch_observer {
 public:
  explicit deferred_observer(std::size_t reserve) { pending_.reserve(reserve); }
  void launched(std::string_view) override {}
  timing_request timing() const override { return timing_request::deferred; }
  void profiled(std::string_view, profile_duration profile) override {
    pending_.push_back(std::move(profile));
  }
  // Reads every kept measurement; returns how many carried ticks.
  std::uint64_t resolve_all() {
    std::uint64_t measured = 0;
    for (auto& p : pending_) {
      if (std::move(p).resolve().has_value()) ++measured;
    }
    pending_.clear();
    return measured;
  }

 private:
  std::vector<profile_duration> pending_;
};

// Takes each kernel's length as the launch path reads it on the issuing thread.
class resolved_observer final : public launch_observer {
 public:
  void launched(std::string_view) override {}
  timing_request timing() const override { return timing_request::resolved; }
  void timed(std::string_view, std::chrono::nanoseconds length, timing_method) override {
    total_ += length;
    ++count_;
  }
  std::uint64_t take_count() noexcept { return std::exchange(count_, 0); }

 private:
  std::chrono::nanoseconds total_{0};
  std::uint64_t count_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The run's shared state.

struct options {
  int rounds = 15;
  std::size_t launches = 20000;
  std::string json_path = "peers.json";
  double max_seconds = 420;
  bool detach_cupti = true;  // cuptiFinalize after each CUPTI case
  bool one_phase = false;    // all launch-cost cases in one interleaved set
};

struct harness {
  options opts;
  run_results results;
  cudaStream_t raw_stream = nullptr;
  std::optional<launchwatch::client> lw;  // empty when the CUDA backend could not start
  std::string lw_unavailable;
  cupti_launch_subscriber subscriber;
  cupti_kernel_tracer tracer;
  std::vector<cudaEvent_t> events;  // 2 per launch of the largest batch
  std::size_t last_batch = 0;       // launches the events case issued in its latest batch
  clock_type::time_point began = clock_type::now();

  void sync_raw() { check_cuda(cudaStreamSynchronize(raw_stream), "cudaStreamSynchronize"); }

  void ensure_events(std::size_t count) {
    while (events.size() < count) {
      cudaEvent_t e = nullptr;
      check_cuda(cudaEventCreate(&e), "cudaEventCreate");
      events.push_back(e);
    }
  }

  void write_json() const {
    std::ofstream out{opts.json_path};
    out << render_json(results);
    if (!out) {
      std::fprintf(stderr, "could not write %s\n", opts.json_path.c_str());
    }
  }
};

const launchwatch::cube_count one_cube{1u};
const launchwatch::cube_dim one_warp{block_threads};

// ---------------------------------------------------------------------------------------------
// 1. Launch cost.

struct batch_result {
  double issue_ns = 0;
  double drain_ns = 0;
  std::uint64_t delivered = 0;
};

// One way of issuing a batch: attach, issue N launches, drain (sync and deal with what was
// measured; returns how many items the method delivered), detach. Only issue and drain are timed.
struct cost_method {
  std::string name;
  std::string label;
  side owner = side::raw;
  bool uses_cupti = false;
  std::function<void()> attach = [] {};
  std::function<void(std::size_t)> issue;
  std::function<std::uint64_t()> drain;
  std::function<void()> detach = [] {};
  bool counts_delivered = true;  // whether `drain`'s count should equal N
};

batch_result run_batch(const cost_method& m, std::size_t n) {
  m.attach();
  try {
    const auto t0 = clock_type::now();
    m.issue(n);
    const auto t1 = clock_type::now();
    const std::uint64_t delivered = m.drain();
    const auto t2 = clock_type::now();
    m.detach();
    return batch_result{ns_between(t0, t1) / static_cast<double>(n),
                        ns_between(t1, t2) / static_cast<double>(n), delivered};
  } catch (...) {
    // A peer left attached would perturb every case after it.
    try {
      m.detach();
    } catch (...) {
    }
    throw;
  }
}

// Runs one batch of `m` into `c`; a case that throws is marked failed with CUDA's or CUPTI's
// message and left out of the rest of the run, so one broken method cannot take the others' numbers
// down.
std::optional<batch_result> try_batch(const cost_method& m, launch_cost_case& c, std::size_t n) {
  if (!c.skipped.empty()) return std::nullopt;
  current_step.store(m.name.c_str());
  try {
    return run_batch(m, n);
  } catch (const std::exception& e) {
    c.skipped = std::string{"failed: "} + e.what();
    c.issue_ns.clear();
    c.drain_ns.clear();
    c.total_ns.clear();
    std::printf("%s failed: %s\n", m.name.c_str(), e.what());
    std::fflush(stdout);
    return std::nullopt;
  }
}

std::vector<cost_method> launch_cost_methods(harness& h) {
  std::vector<cost_method> methods;
  cudaStream_t s = h.raw_stream;

  auto raw_issue = [s](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) check_cuda(launch_raw_empty(s), "cudaLaunchKernel");
  };
  auto raw_drain = [&h] {
    h.sync_raw();
    return std::uint64_t{0};
  };

  methods.push_back(
      {"raw", "raw cudaLaunchKernel", side::raw, false, [] {}, raw_issue, raw_drain, [] {}, false});

  methods.push_back({"nvtx", "NVTX push/pop per launch, no tool", side::peer, false, [] {},
                     [s](std::size_t n) {
                       for (std::size_t i = 0; i < n; ++i) {
                         nvtxRangePushA("raw_empty_kernel");
                         check_cuda(launch_raw_empty(s), "cudaLaunchKernel");
                         nvtxRangePop();
                       }
                     },
                     raw_drain, [] {}, false});

  methods.push_back({"events", "CUDA events around each launch", side::peer, false, [] {},
                     [&h, s](std::size_t n) {
                       h.last_batch = n;
                       for (std::size_t i = 0; i < n; ++i) {
                         check_cuda(cudaEventRecord(h.events[2 * i], s), "cudaEventRecord");
                         check_cuda(launch_raw_empty(s), "cudaLaunchKernel");
                         check_cuda(cudaEventRecord(h.events[2 * i + 1], s), "cudaEventRecord");
                       }
                     },
                     [&h] {
                       h.sync_raw();
                       std::uint64_t read = 0;
                       const std::size_t n = h.last_batch;
                       for (std::size_t i = 0; i < n; ++i) {
                         float ms = 0;
                         if (cudaEventElapsedTime(&ms, h.events[2 * i], h.events[2 * i + 1]) ==
                             cudaSuccess) {
                           ++read;
                         }
                       }
                       return read;
                     },
                     [] {}, true});

  if (h.lw) {
    const launchwatch::client lw = *h.lw;
    auto lw_issue = [lw](std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) lw.launch(lw_empty_kernel{}, one_cube, one_warp);
    };
    auto lw_sync = [lw] {
      lw.sync();
      return std::uint64_t{0};
    };
    methods.push_back({"lw_idle", "launchwatch, nothing observing", side::launchwatch, false, [] {},
                       lw_issue, lw_sync, [] {}, false});

    auto names = std::make_shared<names_only_observer>();
    auto names_watch = std::make_shared<std::optional<launch_observation>>();
    methods.push_back({"lw_names", "launchwatch, names-only observer", side::launchwatch, false,
                       [names, names_watch] { names_watch->emplace(names); }, lw_issue,
                       [lw, names] {
                         lw.sync();
                         return names->take_count();
                       },
                       [names_watch] { names_watch->reset(); }, true});

    // The attribution observer, created fresh for each batch as a user would around one pass.
    for (auto timing : {timing_request::none, timing_request::deferred}) {
      auto holder = std::make_shared<std::shared_ptr<attribution>>();
      auto watch = std::make_shared<std::optional<launch_observation>>();
      const std::size_t reserve = h.opts.launches;
      const bool deferred = timing == timing_request::deferred;
      methods.push_back({deferred ? "lw_attribution" : "lw_attribution_untimed",
                         deferred ? "launchwatch, attribution (deferred timing)"
                                  : "launchwatch, attribution (no timing)",
                         side::launchwatch, false,
                         [holder, watch, timing, reserve] {
                           attribution_options o;
                           o.timing = timing;
                           o.reserve_launches = reserve;
                           *holder = std::make_shared<attribution>(o);
                           watch->emplace(*holder);
                         },
                         lw_issue,
                         [lw, holder, watch, deferred] {
                           watch->reset();
                           lw.sync();
                           const pass_record pass = (*holder)->collect();
                           std::uint64_t delivered = 0;
                           for (const auto& l : pass.launches) {
                             if (!deferred || l.timing.has_value()) ++delivered;
                           }
                           return delivered;
                         },
                         [holder] { holder->reset(); }, true});
    }

    auto deferred = std::make_shared<deferred_observer>(h.opts.launches);
    auto deferred_watch = std::make_shared<std::optional<launch_observation>>();
    methods.push_back({"lw_deferred", "launchwatch, deferred timing", side::launchwatch, false,
                       [deferred, deferred_watch] { deferred_watch->emplace(deferred); }, lw_issue,
                       [lw, deferred, deferred_watch] {
                         deferred_watch->reset();
                         lw.sync();
                         return deferred->resolve_all();
                       },
                       [] {}, true});

    auto resolved = std::make_shared<resolved_observer>();
    auto resolved_watch = std::make_shared<std::optional<launch_observation>>();
    methods.push_back({"lw_resolved", "launchwatch, resolved timing", side::launchwatch, false,
                       [resolved, resolved_watch] { resolved_watch->emplace(resolved); }, lw_issue,
                       [lw, resolved] {
                         lw.sync();
                         return resolved->take_count();
                       },
                       [resolved_watch] { resolved_watch->reset(); }, true});
  }

  methods.push_back({"cupti_callback", "CUPTI callback subscriber (names)", side::peer, true,
                     [&h] { h.subscriber.attach(); }, raw_issue,
                     [&h] {
                       h.sync_raw();
                       return h.subscriber.take_count();
                     },
                     [&h] {
                       h.subscriber.detach();
                       if (h.opts.detach_cupti) cupti_detach_process();
                     },
                     true});

  methods.push_back({"cupti_activity", "CUPTI concurrent-kernel activity", side::peer, true,
                     [&h] {
                       h.tracer.enable(false);
                       (void)h.tracer.take_count();
                     },
                     raw_issue,
                     [&h] {
                       h.sync_raw();
                       h.tracer.flush(false);
                       return h.tracer.take_count();
                     },
                     [&h] {
                       h.tracer.disable();
                       (void)h.tracer.take_count();
                       if (h.opts.detach_cupti) cupti_detach_process();
                     },
                     true});

  // Raw again, right after the CUPTI cases: a peer left attached would show here.
  methods.push_back({"raw_after_cupti", "raw cudaLaunchKernel, right after CUPTI", side::raw, false,
                     [] {}, raw_issue, raw_drain, [] {}, false});
  return methods;
}

// Runs `methods` round-robin for the configured rounds, after one warm-up batch each (module
// loads, first-call paths, NVTX's one-time initialisation, a full batch's worth of timing slots),
// appending their cases to the results under `phase`, ratios against `baseline`.
void run_interleaved(harness& h, const std::vector<cost_method>& methods, const std::string& phase,
                     const std::string& baseline) {
  const std::size_t n = h.opts.launches;
  auto& cases = h.results.launch_cost;
  const std::size_t first = cases.size();
  for (const auto& m : methods) {
    launch_cost_case c;
    c.name = m.name;
    c.label = m.label;
    c.owner = m.owner;
    c.phase = phase;
    c.baseline = baseline;
    cases.push_back(std::move(c));
  }
  for (std::size_t i = 0; i < methods.size(); ++i) (void)try_batch(methods[i], cases[first + i], n);

  std::printf("launch cost, phase %s: %d rounds x %zu cases x %zu launches\n", phase.c_str(),
              h.opts.rounds, methods.size(), n);
  std::fflush(stdout);
  for (int r = 0; r < h.opts.rounds; ++r) {
    for (std::size_t i = 0; i < methods.size(); ++i) {
      launch_cost_case& c = cases[first + i];
      const std::optional<batch_result> result = try_batch(methods[i], c, n);
      if (!result) continue;
      const batch_result& b = *result;
      c.issue_ns.push_back(b.issue_ns);
      c.drain_ns.push_back(b.drain_ns);
      c.total_ns.push_back(b.issue_ns + b.drain_ns);
      if (methods[i].counts_delivered) {
        c.expected += n;
        c.delivered += b.delivered;
      }
    }
    // Written every round, so a run stopped by its time limit still leaves what it measured.
    h.results.seconds = ns_between(h.began, clock_type::now()) / 1e9;
    h.write_json();
  }
}

// The cases of one phase, by name, from the full list; `rename` gives a phase's copy its own name.
std::vector<cost_method> pick(const std::vector<cost_method>& all,
                              std::initializer_list<std::pair<const char*, const char*>> names) {
  std::vector<cost_method> out;
  for (const auto& [name, renamed] : names) {
    for (const auto& m : all) {
      if (m.name == name) {
        out.push_back(m);
        out.back().name = renamed;
      }
    }
  }
  return out;
}

// Rows that say why launchwatch's cases did not run, when its CUDA client did not start.
void add_unavailable_launchwatch_cases(harness& h, const std::string& phase) {
  if (h.lw) return;
  for (const char* name : {"lw_idle", "lw_names", "lw_attribution_untimed", "lw_attribution",
                           "lw_deferred", "lw_resolved"}) {
    launch_cost_case c;
    c.name = name;
    c.label = std::string{"launchwatch: "} + name;
    c.owner = side::launchwatch;
    c.phase = phase;
    c.skipped = h.lw_unavailable;
    h.results.launch_cost.push_back(std::move(c));
  }
}

// Phase clean: everything but CUPTI, in a process that has never called it. CUPTI, once attached,
// can leave the runtime on a slower launch path for the rest of the process, which would inflate
// every case measured after it.
void measure_launch_cost_clean(harness& h) {
  h.ensure_events(2 * h.opts.launches);
  const std::vector<cost_method> all = launch_cost_methods(h);
  std::vector<cost_method> clean;
  for (const auto& m : all) {
    if (!m.uses_cupti && m.name != "raw_after_cupti") clean.push_back(m);
  }
  run_interleaved(h, clean, "clean", "raw");
  add_unavailable_launchwatch_cases(h, "clean");
  for (const auto& c : h.results.launch_cost) {
    if (c.name == "raw") h.results.isolation.raw_before_cupti_ns = summarize(c.issue_ns);
  }
}

// One phase: every case in one interleaved set, CUPTI's included, so every ratio is taken in the
// same process state (CUPTI loaded from its first case on). Raw launches are timed first in a
// process that has not called CUPTI yet, to show what that state costs.
void measure_launch_cost_one_phase(harness& h) {
  h.ensure_events(2 * h.opts.launches);
  const std::vector<cost_method> all = launch_cost_methods(h);
  launch_cost_case scratch;
  for (const auto& m : all) {
    scratch.skipped.clear();
    if (!m.uses_cupti) (void)try_batch(m, scratch, h.opts.launches);  // warm-up
  }
  std::vector<double> before;
  for (int r = 0; r < h.opts.rounds; ++r) {
    scratch.skipped.clear();
    if (const auto b = try_batch(all.front(), scratch, h.opts.launches))
      before.push_back(b->issue_ns);
  }
  h.results.isolation.raw_before_cupti_ns = summarize(before);
  run_interleaved(h, all, "one", "raw");
  add_unavailable_launchwatch_cases(h, "one");
  for (const auto& c : h.results.launch_cost) {
    if (c.name == "raw") h.results.isolation.raw_interleaved_ns = summarize(c.issue_ns);
    if (c.name == "raw_after_cupti")
      h.results.isolation.raw_right_after_cupti_ns = summarize(c.issue_ns);
  }
}

// Phase cupti: the CUPTI peers, each detached from the process after its batch, interleaved with
// raw launches (first in each round, and right after the CUPTI cases) and launchwatch again, so
// their ratios are taken against a baseline measured beside them.
void measure_launch_cost_cupti(harness& h) {
  const std::vector<cost_method> all = launch_cost_methods(h);
  const std::vector<cost_method> methods = pick(all, {{"raw", "raw_b"},
                                                      {"lw_idle", "lw_idle_b"},
                                                      {"lw_deferred", "lw_deferred_b"},
                                                      {"cupti_callback", "cupti_callback"},
                                                      {"cupti_activity", "cupti_activity"},
                                                      {"raw_after_cupti", "raw_after_cupti"}});
  run_interleaved(h, methods, "cupti", "raw_b");
  for (const auto& c : h.results.launch_cost) {
    if (c.name == "raw_b") h.results.isolation.raw_interleaved_ns = summarize(c.issue_ns);
    if (c.name == "raw_after_cupti")
      h.results.isolation.raw_right_after_cupti_ns = summarize(c.issue_ns);
  }
}

// ---------------------------------------------------------------------------------------------
// Spin calibration.

// Back-to-back period of raw spin kernels told to spin `spin_ns`, by events around a pass.
double spin_period_ns(harness& h, std::uint64_t spin_ns, std::size_t kernels) {
  h.ensure_events(2);
  check_cuda(cudaEventRecord(h.events[0], h.raw_stream), "cudaEventRecord");
  for (std::size_t i = 0; i < kernels; ++i)
    check_cuda(launch_raw_spin(h.raw_stream, spin_ns), "cudaLaunchKernel");
  check_cuda(cudaEventRecord(h.events[1], h.raw_stream), "cudaEventRecord");
  h.sync_raw();
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, h.events[0], h.events[1]), "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1e6 / static_cast<double>(kernels);
}

std::uint64_t calibrate_spin(harness& h, double target_ns) {
  // Queue the pass behind a blocker so the host's launch rate cannot set the period.
  const std::size_t kernels = target_ns < 20000 ? 2000 : 400;
  double spin = target_ns;
  double period = 0;
  for (int i = 0; i < 3; ++i) {
    check_cuda(launch_raw_blocker(h.raw_stream, 2'000'000), "cudaLaunchKernel");
    period = spin_period_ns(h, static_cast<std::uint64_t>(spin), kernels);
    spin = std::max(0.0, spin - (period - target_ns));
  }
  h.results.calibrations.push_back(calibration{target_ns, spin, period});
  return static_cast<std::uint64_t>(spin);
}

// ---------------------------------------------------------------------------------------------
// 2. Device perturbation.

struct pass_method {
  std::string name;
  std::string label;
  side owner = side::raw;
  std::string untimed;
  bool available = true;
  std::function<void()> attach = [] {};
  std::function<void(std::size_t)> issue;  // issues the pass and waits for it to finish
  std::function<void()> detach = [] {};    // reads / flushes, untimed
};

void measure_perturbation(harness& h, const std::vector<std::pair<double, std::uint64_t>>& spins) {
  for (const auto& spin_spec : spins) {
    const double target = spin_spec.first;
    const std::uint64_t spin_ns = spin_spec.second;
    const std::size_t kernels = target < 20000 ? 2000 : 400;
    cudaStream_t s = h.raw_stream;
    const std::uint64_t spin = spin_ns;
    h.ensure_events(2 * kernels);
    std::vector<pass_method> methods;
    methods.push_back({"raw", "raw, untimed", side::raw, "raw", true, [] {},
                       [&h, s, spin](std::size_t n) {
                         for (std::size_t i = 0; i < n; ++i)
                           check_cuda(launch_raw_spin(s, spin), "cudaLaunchKernel");
                         h.sync_raw();
                       }});
    methods.push_back({"events", "raw + CUDA events around each launch", side::peer, "raw", true,
                       [] {},
                       [&h, s, spin](std::size_t n) {
                         for (std::size_t i = 0; i < n; ++i) {
                           check_cuda(cudaEventRecord(h.events[2 * i], s), "cudaEventRecord");
                           check_cuda(launch_raw_spin(s, spin), "cudaLaunchKernel");
                           check_cuda(cudaEventRecord(h.events[2 * i + 1], s), "cudaEventRecord");
                         }
                         h.sync_raw();
                       }});
    methods.push_back({"cupti_activity", "raw + CUPTI concurrent-kernel activity", side::peer,
                       "raw", true, [&h] { h.tracer.enable(false); },
                       [&h, s, spin](std::size_t n) {
                         for (std::size_t i = 0; i < n; ++i)
                           check_cuda(launch_raw_spin(s, spin), "cudaLaunchKernel");
                         h.sync_raw();
                       },
                       [&h] {
                         h.tracer.flush(false);
                         h.tracer.disable();
                         (void)h.tracer.take_count();
                         if (h.opts.detach_cupti) cupti_detach_process();
                       }});
    if (h.lw) {
      const launchwatch::client lw = *h.lw;
      auto lw_pass = [lw, spin](std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) lw.launch(lw_spin_kernel{spin}, one_cube, one_warp);
        lw.sync();
      };
      methods.push_back(
          {"lw_idle", "launchwatch, untimed", side::launchwatch, "lw_idle", true, [] {}, lw_pass});
      auto deferred = std::make_shared<deferred_observer>(kernels);
      auto watch = std::make_shared<std::optional<launch_observation>>();
      methods.push_back({"lw_deferred", "launchwatch, deferred timing", side::launchwatch,
                         "lw_idle", true, [deferred, watch] { watch->emplace(deferred); }, lw_pass,
                         [deferred, watch] {
                           watch->reset();
                           (void)deferred->resolve_all();
                         }});
      auto holder = std::make_shared<std::shared_ptr<attribution>>();
      auto attribution_watch = std::make_shared<std::optional<launch_observation>>();
      methods.push_back({"lw_attribution", "launchwatch, attribution (deferred)", side::launchwatch,
                         "lw_idle", true,
                         [holder, attribution_watch, kernels] {
                           attribution_options o;
                           o.reserve_launches = kernels;
                           *holder = std::make_shared<attribution>(o);
                           attribution_watch->emplace(*holder);
                         },
                         lw_pass,
                         [holder, attribution_watch] {
                           attribution_watch->reset();
                           (void)(*holder)->collect();
                           holder->reset();
                         }});
      auto resolved = std::make_shared<resolved_observer>();
      auto resolved_watch = std::make_shared<std::optional<launch_observation>>();
      methods.push_back({"lw_resolved", "launchwatch, resolved timing", side::launchwatch,
                         "lw_idle", true,
                         [resolved, resolved_watch] { resolved_watch->emplace(resolved); }, lw_pass,
                         [resolved, resolved_watch] {
                           resolved_watch->reset();
                           (void)resolved->take_count();
                         }});
    } else {
      for (const char* name : {"lw_idle", "lw_deferred", "lw_attribution", "lw_resolved"}) {
        pass_method m;
        m.name = name;
        m.label = std::string{"launchwatch: "} + name;
        m.owner = side::launchwatch;
        m.untimed = "lw_idle";
        m.available = false;
        methods.push_back(std::move(m));
      }
    }

    const std::size_t first = h.results.perturbation.size();
    for (const auto& m : methods) {
      perturbation_case c;
      c.name = m.name;
      c.label = m.label;
      c.owner = m.owner;
      c.untimed = m.untimed;
      c.kernel_target_ns = target;
      c.kernels_per_pass = kernels;
      if (!m.available) c.skipped = h.lw_unavailable;
      h.results.perturbation.push_back(std::move(c));
    }
    // One pass of method i; a method that throws is marked failed and left out from then on.
    auto pass = [&](std::size_t i, std::size_t n) -> std::optional<double> {
      perturbation_case& c = h.results.perturbation[first + i];
      const pass_method& m = methods[i];
      if (!m.available || !c.skipped.empty()) return std::nullopt;
      current_step.store(m.name.c_str());
      try {
        m.attach();
        const auto t0 = clock_type::now();
        m.issue(n);
        const auto t1 = clock_type::now();
        m.detach();
        return ns_between(t0, t1) / static_cast<double>(n);
      } catch (const std::exception& e) {
        try {
          m.detach();
        } catch (...) {
        }
        c.skipped = std::string{"failed: "} + e.what();
        c.per_kernel_ns.clear();
        std::printf("%s (%.0f ns kernels) failed: %s\n", m.name.c_str(), target, e.what());
        std::fflush(stdout);
        return std::nullopt;
      }
    };
    for (std::size_t i = 0; i < methods.size(); ++i) (void)pass(i, kernels / 10);  // warm-up
    for (int r = 0; r < h.opts.rounds; ++r) {
      for (std::size_t i = 0; i < methods.size(); ++i) {
        if (const auto per_kernel = pass(i, kernels)) {
          h.results.perturbation[first + i].per_kernel_ns.push_back(*per_kernel);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Fidelity.

std::int64_t instant_ns(instant t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// CUPTI's records of one kernel, in issue order.
std::vector<kernel_record> records_named(std::vector<kernel_record> all, std::string_view name) {
  std::vector<kernel_record> out;
  for (const auto& r : all) {
    if (r.name != nullptr && std::string_view{r.name}.find(name) != std::string_view::npos) {
      out.push_back(r);
    }
  }
  std::sort(out.begin(), out.end(), [](const kernel_record& a, const kernel_record& b) {
    return a.correlation_id < b.correlation_id;
  });
  return out;
}

void busy_wait(std::chrono::nanoseconds gap) {
  const auto until = clock_type::now() + gap;
  while (clock_type::now() < until) {
  }
}

struct fidelity_spec {
  std::string kernel;         // "empty", "5us", "50us"
  std::uint64_t spin_ns = 0;  // 0: the empty kernel
  double target_ns = 0;
  std::size_t kernels = 0;
};

const char* lw_side_name(const std::string& method) {
  return method == "CUDA events" ? "fidelity: CUDA events" : "fidelity: launchwatch deferred";
}

void add_idle(idle_summary& into, const idle_summary& pass) {
  into.window_ns += pass.window_ns;
  into.busy_ns += pass.busy_ns;
  into.idle_ns += pass.idle_ns;
  into.kernels += pass.kernels;
}

void measure_fidelity(harness& h, const std::vector<fidelity_spec>& specs, int passes) {
  h.tracer.enable(true);
  (void)h.tracer.take_records();
  std::string notes;
  for (const auto& spec : specs) {
    // CUPTI's median length of this kernel, device-bound: raw (the events pass), timed by
    // launchwatch.
    double raw_ns = std::numeric_limits<double>::quiet_NaN();
    double timed_ns = std::numeric_limits<double>::quiet_NaN();
    for (const bool device_bound : {false, true}) {
      const std::string regime = device_bound ? "device-bound" : "launch-bound";
      // Launch-bound: each kernel reaches an idle device (the host waits out a spin kernel and a
      // margin before the next launch; empty kernels are launch-bound by themselves). Device-bound:
      // the pass queues behind a blocker kernel, so kernels run back to back.
      const auto gap = spec.spin_ns == 0 ? std::chrono::nanoseconds{0}
                                         : std::chrono::nanoseconds{spec.spin_ns + 20'000};
      const std::uint64_t blocker_ns =
          static_cast<std::uint64_t>(spec.kernels) * 15'000 + 1'000'000;

      for (const std::string method : {"launchwatch deferred", "CUDA events"}) {
        current_step.store(lw_side_name(method));
        fidelity_case f;
        f.kernel = spec.kernel;
        f.regime = regime;
        f.method = method;
        const bool lw_side = method == "launchwatch deferred";
        if (lw_side && !h.lw) {
          f.skipped = h.lw_unavailable;
          h.results.fidelity.push_back(std::move(f));
          continue;
        }
        std::vector<std::int64_t> measured;
        std::vector<std::int64_t> reference;
        try {
          for (int p = 0; p < passes; ++p) {
            (void)h.tracer.take_records();
            std::vector<interval> method_windows;
            std::vector<interval> cupti_windows;
            std::string_view name;
            if (lw_side) {
              const launchwatch::client lw = *h.lw;
              name = spec.spin_ns == 0 ? "lw_empty_kernel" : "lw_spin_kernel";
              if (device_bound) lw.launch(lw_blocker_kernel{blocker_ns}, one_cube, one_warp);
              attribution_options o;
              o.reserve_launches = spec.kernels;
              auto observer = std::make_shared<attribution>(o);
              {
                launch_observation watching{observer};
                for (std::size_t i = 0; i < spec.kernels; ++i) {
                  if (spec.spin_ns == 0) {
                    lw.launch(lw_empty_kernel{}, one_cube, one_warp);
                  } else {
                    lw.launch(lw_spin_kernel{spec.spin_ns}, one_cube, one_warp);
                    if (!device_bound) busy_wait(gap);
                  }
                }
              }
              lw.sync();
              const pass_record pass = observer->collect();
              const pass_summary summary = summarize(pass);
              idle_summary reported;
              reported.window_ns = summary.window.count();
              reported.busy_ns = summary.window.count() - summary.idle.count();
              reported.idle_ns = summary.idle.count();
              reported.kernels = summary.timed_launches;
              add_idle(f.method_idle, reported);
              for (const auto& l : pass.launches) {
                if (!l.timing || !l.timing->ticks) {
                  throw std::runtime_error{"a launch came back without device ticks"};
                }
                measured.push_back(l.timing->length.count());
                method_windows.push_back(
                    {instant_ns(l.timing->ticks->start()), instant_ns(l.timing->ticks->end())});
              }
              // The report's idle time must be what its own windows give; say so if not.
              const idle_summary own = idle_time(method_windows);
              if (std::llabs(own.idle_ns - reported.idle_ns) >
                  std::max<std::int64_t>(1000, own.idle_ns / 100)) {
                notes += "attribution idle " + std::to_string(reported.idle_ns) +
                         " ns differs from its windows' " + std::to_string(own.idle_ns) + " ns (" +
                         spec.kernel + ", " + regime + "); ";
              }
            } else {
              name = spec.spin_ns == 0 ? "raw_empty_kernel" : "raw_spin_kernel";
              h.ensure_events(2 * spec.kernels + 1);
              cudaStream_t s = h.raw_stream;
              cudaEvent_t origin = h.events[2 * spec.kernels];
              check_cuda(cudaEventRecord(origin, s), "cudaEventRecord");
              if (device_bound) check_cuda(launch_raw_blocker(s, blocker_ns), "cudaLaunchKernel");
              for (std::size_t i = 0; i < spec.kernels; ++i) {
                check_cuda(cudaEventRecord(h.events[2 * i], s), "cudaEventRecord");
                check_cuda(
                    spec.spin_ns == 0 ? launch_raw_empty(s) : launch_raw_spin(s, spec.spin_ns),
                    "cudaLaunchKernel");
                check_cuda(cudaEventRecord(h.events[2 * i + 1], s), "cudaEventRecord");
                if (!device_bound) busy_wait(gap);
              }
              h.sync_raw();
              for (std::size_t i = 0; i < spec.kernels; ++i) {
                float start_ms = 0;
                float end_ms = 0;
                check_cuda(cudaEventElapsedTime(&start_ms, origin, h.events[2 * i]),
                           "cudaEventElapsedTime");
                check_cuda(cudaEventElapsedTime(&end_ms, origin, h.events[2 * i + 1]),
                           "cudaEventElapsedTime");
                const auto start = static_cast<std::int64_t>(static_cast<double>(start_ms) * 1e6);
                const auto end = static_cast<std::int64_t>(static_cast<double>(end_ms) * 1e6);
                measured.push_back(end - start);
                method_windows.push_back({start, end});
              }
              add_idle(f.method_idle, idle_time(method_windows));
            }
            h.tracer.flush(false);
            std::vector<kernel_record> records = records_named(h.tracer.take_records(), name);
            if (records.size() != spec.kernels) {
              h.tracer.flush(true);
              auto more = records_named(h.tracer.take_records(), name);
              records.insert(records.end(), more.begin(), more.end());
              std::sort(records.begin(), records.end(),
                        [](const kernel_record& a, const kernel_record& b) {
                          return a.correlation_id < b.correlation_id;
                        });
            }
            if (records.size() != spec.kernels) {
              throw std::runtime_error{"CUPTI delivered " + std::to_string(records.size()) +
                                       " records of " + std::to_string(spec.kernels) + " kernels"};
            }
            for (const auto& r : records) {
              reference.push_back(static_cast<std::int64_t>(r.end_ns - r.start_ns));
              cupti_windows.push_back(
                  {static_cast<std::int64_t>(r.start_ns), static_cast<std::int64_t>(r.end_ns)});
            }
            add_idle(f.cupti_idle, idle_time(cupti_windows));
            ++f.passes;
          }
          f.durations = compare_durations(measured, reference);
        } catch (const std::exception& e) {
          f.skipped = e.what();
        }
        if (device_bound && f.skipped.empty()) {
          (lw_side ? timed_ns : raw_ns) = f.durations.median_reference_ns;
        }
        h.results.fidelity.push_back(std::move(f));
      }
    }
    // The same kernels through launchwatch untimed, device-bound, seen by CUPTI alone: with the
    // raw and timed lengths above, what the timing itself adds to each kernel on the device.
    instrumentation_cost cost;
    cost.kernel = spec.kernel;
    cost.raw_ns = raw_ns;
    cost.launchwatch_timed_ns = timed_ns;
    if (h.lw) {
      current_step.store("fidelity: launchwatch untimed");
      try {
        const launchwatch::client lw = *h.lw;
        (void)h.tracer.take_records();
        lw.launch(lw_blocker_kernel{static_cast<std::uint64_t>(spec.kernels) * 15'000 + 1'000'000},
                  one_cube, one_warp);
        for (std::size_t i = 0; i < spec.kernels; ++i) {
          if (spec.spin_ns == 0) {
            lw.launch(lw_empty_kernel{}, one_cube, one_warp);
          } else {
            lw.launch(lw_spin_kernel{spec.spin_ns}, one_cube, one_warp);
          }
        }
        lw.sync();
        h.tracer.flush(false);
        std::vector<double> lengths;
        for (const auto& r :
             records_named(h.tracer.take_records(),
                           spec.spin_ns == 0 ? "lw_empty_kernel" : "lw_spin_kernel")) {
          lengths.push_back(static_cast<double>(r.end_ns - r.start_ns));
        }
        cost.launchwatch_untimed_ns = summarize(std::move(lengths)).median;
      } catch (const std::exception& e) {
        notes += std::string{"untimed launchwatch pass failed: "} + e.what() + "; ";
      }
    }
    h.results.instrumentation.push_back(cost);
  }
  h.tracer.disable();
  if (h.opts.detach_cupti) cupti_detach_process();
  const std::uint64_t dropped = h.tracer.dropped();
  if (dropped != 0) notes += "CUPTI dropped " + std::to_string(dropped) + " records; ";
  h.results.notes += notes;
}

// ---------------------------------------------------------------------------------------------

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument{std::string{arg} + " needs a value"};
      return argv[++i];
    };
    if (arg == "--rounds") {
      o.rounds = std::stoi(value());
    } else if (arg == "--launches") {
      o.launches = std::stoul(value());
    } else if (arg == "--json") {
      o.json_path = value();
    } else if (arg == "--max-seconds") {
      o.max_seconds = std::stod(value());
    } else if (arg == "--keep-cupti-attached") {
      o.detach_cupti = false;
    } else if (arg == "--one-phase") {
      o.one_phase = true;
    } else if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: %s [--rounds R] [--launches N] [--json FILE] [--max-seconds S] "
          "[--keep-cupti-attached] [--one-phase]\n",
          argv[0]);
      std::exit(0);
    } else {
      throw std::invalid_argument{"unknown argument '" + std::string{arg} +
                                  "'; expected --rounds, --launches, --json, --max-seconds, "
                                  "--keep-cupti-attached or --one-phase"};
    }
  }
  if (o.rounds < 3) throw std::invalid_argument{"--rounds must be at least 3 for a spread"};
  if (o.launches < 1000) throw std::invalid_argument{"--launches must be at least 1000"};
  return o;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

int run(int argc, char** argv) {
  harness h;
  h.opts = parse(argc, argv);

  int devices = 0;
  const cudaError_t count_status = cudaGetDeviceCount(&devices);
  if (count_status != cudaSuccess || devices == 0) {
    std::printf("no CUDA device visible; skipping (%s)\n",
                count_status != cudaSuccess ? cudaGetErrorString(count_status) : "0 devices");
    return 0;
  }

  // A run that hangs (a measurement that never resolves) must not eat the device lease: leave
  // with what was written so far.
  std::thread([limit = h.opts.max_seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(limit));
    std::fprintf(stderr, "peers harness: still running after %.0f s (in %s); giving up\n", limit,
                 current_step.load());
    std::fflush(stdout);
    std::_Exit(3);
  }).detach();

  check_cuda(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int driver = 0;
  int runtime = 0;
  check_cuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check_cuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  run_results& r = h.results;
  r.device_name = prop.name;
  r.multiprocessors = prop.multiProcessorCount;
  r.driver_version = cuda_version_text(driver);
  r.runtime_version = cuda_version_text(runtime);
  r.started_at = utc_now();
  r.rounds = h.opts.rounds;
  r.launches_per_batch = h.opts.launches;
  check_cuda(cudaStreamCreateWithFlags(&h.raw_stream, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags");

  try {
    h.lw = launchwatch::client::cuda(0);
  } catch (const std::exception& e) {
    h.lw_unavailable = std::string{"launchwatch's CUDA client did not start: "} + e.what();
    r.notes += h.lw_unavailable + "; ";
    std::printf("%s\n", h.lw_unavailable.c_str());
  }

  std::printf("device: %s, driver %s, runtime %s\n", r.device_name.c_str(),
              r.driver_version.c_str(), r.runtime_version.c_str());
  std::fflush(stdout);

  if (h.opts.one_phase) {
    measure_launch_cost_one_phase(h);
    r.cupti_version = cupti_version();
  } else {
    measure_launch_cost_clean(h);
  }
  r.seconds = ns_between(h.began, clock_type::now()) / 1e9;
  h.write_json();

  current_step.store("calibration");
  std::printf("calibrating spin kernels\n");
  std::fflush(stdout);
  const std::uint64_t spin5 = calibrate_spin(h, 5000);
  const std::uint64_t spin50 = calibrate_spin(h, 50000);

  current_step.store("perturbation");
  std::printf("device perturbation\n");
  std::fflush(stdout);
  measure_perturbation(h, {{5000.0, spin5}, {50000.0, spin50}});
  r.seconds = ns_between(h.began, clock_type::now()) / 1e9;
  h.write_json();

  current_step.store("launch cost, CUPTI phase");
  if (!h.opts.one_phase) {
    measure_launch_cost_cupti(h);
    r.cupti_version = cupti_version();
  }
  r.seconds = ns_between(h.began, clock_type::now()) / 1e9;
  h.write_json();

  current_step.store("fidelity");
  std::printf("fidelity against CUPTI\n");
  std::fflush(stdout);
  measure_fidelity(
      h, {{"empty", 0, 0, 4000}, {"5us", spin5, 5000, 2000}, {"50us", spin50, 50000, 400}}, 3);
  r.seconds = ns_between(h.began, clock_type::now()) / 1e9;
  h.write_json();

  current_step.store("rendering");
  std::printf("\n%s", render_tables(r).c_str());
  std::printf("json: %s\n", h.opts.json_path.c_str());
  for (cudaEvent_t e : h.events) cudaEventDestroy(e);
  cudaStreamDestroy(h.raw_stream);
  return 0;
}

}  // namespace
}  // namespace launchwatch::peers

int main(int argc, char** argv) {
  try {
    return launchwatch::peers::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "launchwatch_peers_bench: %s\n", e.what());
    return 1;
  }
}
