// The peers harness, measurement 1: what observing a launch costs the host (see peers_bench.cu).

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/runtime/client.hpp>

#include "analysis.hpp"
#include "cupti_peers.hpp"
#include "peers_harness.hpp"
#include "peers_kernels.cuh"
#include "peers_observers.hpp"
#include "results.hpp"

namespace launchwatch::peers {
namespace {

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

}  // namespace

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

}  // namespace launchwatch::peers
