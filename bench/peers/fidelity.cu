// The peers harness, measurement 3: how true the timings are, against CUPTI's records of the
// same kernels (see peers_bench.cu).

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/runtime/client.hpp>

#include "analysis.hpp"
#include "cupti_peers.hpp"
#include "peers_harness.hpp"
#include "peers_kernels.cuh"
#include "peers_observers.hpp"
#include "results.hpp"

namespace launchwatch::peers {
namespace {

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

const char* lw_side_name(const std::string& method) {
  return method == "CUDA events" ? "fidelity: CUDA events" : "fidelity: launchwatch deferred";
}

void add_idle(idle_summary& into, const idle_summary& pass) {
  into.window_ns += pass.window_ns;
  into.busy_ns += pass.busy_ns;
  into.idle_ns += pass.idle_ns;
  into.kernels += pass.kernels;
}

}  // namespace

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

}  // namespace launchwatch::peers
