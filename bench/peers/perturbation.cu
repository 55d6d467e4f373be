// The peers harness, measurement 2: what timing does to the device's pass (see peers_bench.cu),
// with the spin calibration it needs.

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
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

}  // namespace

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

}  // namespace launchwatch::peers
