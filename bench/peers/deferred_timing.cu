// Deferred timing on CUDA against its targets (issue 10), side by side in one run:
//
//   1. pass wall, deferred / untimed, for 2000 back-to-back launches through client.launch:
//      ~5 µs x 132 cubes writing nothing; the same ending with per-unit output stores; ~50 µs x 132
//      cubes with outputs; a 262144-cube fill. Kernels spin on clock64, not %globaltimer (many
//      threads reading the global timer distort the kernel itself at 8+ cubes per SM).
//   2. durations against CUPTI: the same kernels run untimed under CUPTI's concurrent-kernel
//      records, then timed by launchwatch with CUPTI detached; the median difference per shape
//      (0/5/50 µs x 1/132 cubes), and the grid overhead each shape implies (CUPTI's median minus
//      the in-kernel window's): the figure grid_overhead.cpp's table holds for this device.
//   3. host cost per launch: raw cudaLaunchKernel of a plain kernel, client.launch untimed and
//      deferred, interleaved in batches.
//   4. with --long N: one attribute_pass of N deferred-timed launches, its device memory before and
//      after, and how many measurements it got.
//
// Usage: launchwatch_deferred_timing_bench [--rounds R] [--long N] [--backend cuda|hip]
//                                          [--host-only]
// --host-only runs part 3 alone, with the host breakdown.
// Every figure is a median over rounds of this run; compare within the run only. --backend hip
// measures the HIP backend through HIP's NVIDIA platform (a build of the hip-nvidia preset): the
// same kernels, launched and timed by the HIP backend, against the same CUPTI records (a HIP kernel
// on NVIDIA is a CUDA kernel), beside raw cudaLaunchKernel; the host breakdown times the CUDA
// backend's collector, which the HIP backend shares (backend/gpu), so it runs only for cuda.

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <launchwatch/launchwatch.hpp>

#include <launchwatch/launch_path.hpp>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_health.hpp"
#include "backend/cuda/timing_slots.hpp"
#include "cupti_peers.hpp"

namespace {

namespace lw = launchwatch;
using clock_type = std::chrono::steady_clock;

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", call, cudaGetErrorString(status));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}
double us_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t).count();
}

// Every unit spins `cycles` of its SM's clock, then, when `out` is not empty, stores one value:
// the way a real kernel ends, with its outputs.
struct spin_cycles {
  long long cycles;
  lw::device_span<float> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit u) const {
#if defined(__CUDA_ARCH__)
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
#endif
    if (!out.empty()) {
      const auto i = u.absolute_pos();
      if (i < out.size()) out[i] = static_cast<float>(i);
    }
  }
};

struct fill {
  lw::device_span<float> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit u) const {
    const auto i = u.absolute_pos();
    if (i < out.size()) out[i] = 1.0f;
  }
};

struct nothing {
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit) const {}
};

__global__ void raw_nothing() {}

/// Keeps every deferred measurement unread until the pass is over, as an attribution does.
/// reserve() grows its storage before a timed loop, so the host-cost rows measure launchwatch's
/// deferred path and not this observer's vector growth (an attribution keeps its entries in storage
/// made at `launched`, not moved per launch).
class keeper final : public lw::launch_observer {
 public:
  void reserve(std::size_t launches) {
    std::lock_guard lock{mutex_};
    kept_.reserve(launches);
  }
  void launched(std::string_view) override {}
  lw::timing_request timing() const override { return lw::timing_request::deferred; }
  void profiled(std::string_view, lw::profile_duration profile) override {
    std::lock_guard lock{mutex_};
    kept_.push_back(std::move(profile));
  }
  std::vector<double> read_us() {
    std::vector<lw::profile_duration> kept;
    {
      std::lock_guard lock{mutex_};
      kept.swap(kept_);
    }
    std::vector<double> out;
    for (auto& p : kept) {
      if (auto t = std::move(p).resolve()) out.push_back(static_cast<double>(t->length().count()) / 1000.0);
    }
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<lw::profile_duration> kept_;
};

struct shape {
  std::string label;
  unsigned cubes;
  unsigned units;
  long long cycles;  // -1: a fill instead of a spin
  bool outputs;
  int launches;
};

/// Issues `s` `s.launches` times through `c` and waits for them; returns the wall time.
double pass_us(lw::client& c, const shape& s, lw::buffer<float>& out) {
  const auto began = clock_type::now();
  for (int i = 0; i < s.launches; ++i) {
    if (s.cycles < 0) {
      c.launch(fill{out.view()}, lw::cube_count{s.cubes}, lw::cube_dim{s.units});
    } else {
      c.launch(spin_cycles{s.cycles, s.outputs ? out.view() : lw::device_span<float>{}},
               lw::cube_count{s.cubes}, lw::cube_dim{s.units});
    }
  }
  c.sync();
  return us_since(began);
}

/// Cycles of clock64 per microsecond on this device, from the untimed period of a spin.
double cycles_per_us(lw::client& c, lw::buffer<float>& out) {
  const shape probe{"probe", 1, 32, 100'000, false, 50};
  (void)pass_us(c, probe, out);
  const double period = pass_us(c, probe, out) / probe.launches;
  return 100'000.0 / period;
}

void wall_ratios(lw::client& c, double cpus, int rounds) {
  auto out = c.empty<float>(std::size_t{262144} * 128);
  const auto cyc = [&](double us) { return static_cast<long long>(us * cpus); };
  const std::vector<shape> shapes{
      {"5 us x 132 cubes, no outputs", 132, 128, cyc(5), false, 2000},
      {"5 us x 132 cubes, per-unit output stores", 132, 128, cyc(5), true, 2000},
      {"50 us x 132 cubes, per-unit output stores", 132, 128, cyc(50), true, 400},
      {"fill, 262144 cubes x 128 units", 262144, 128, -1, true, 200},
  };
  std::printf("\n[wall] pass wall time, deferred / untimed, %d interleaved rounds\n", rounds);
  std::printf("%-44s %10s %10s %8s %14s\n", "shape", "untimed us", "timed us", "ratio", "p10-p90");
  for (const auto& s : shapes) {
    std::vector<double> plain, timed, ratio;
    for (int r = -1; r < rounds; ++r) {
      const double a = pass_us(c, s, out);
      auto keeps = std::make_shared<keeper>();
      double b = 0;
      {
        lw::launch_observation watching{keeps};
        b = pass_us(c, s, out);
      }
      (void)keeps->read_us();
      if (r < 0) continue;
      plain.push_back(a / s.launches);
      timed.push_back(b / s.launches);
      ratio.push_back(b / a);
    }
    std::printf("%-44s %10.3f %10.3f %7.3fx  %.3f-%.3f\n", s.label.c_str(), median(plain),
                median(timed), median(ratio), percentile(ratio, 0.1), percentile(ratio, 0.9));
  }
}

/// Host cost per empty launch: raw cudaLaunchKernel, client.launch untimed and deferred, in short
/// batches interleaved round by round (the order rotating), so the drift of this host's clocks and
/// of the driver's queues between one long loop and the next does not land on one side. Each ratio
/// is taken within a round; the medians and their spread are over rounds.
void host_costs(lw::client& c, int rounds) {
  constexpr int batch = 500;
  const int interleaved = std::max(30, rounds * 6);
  cudaStream_t raw_stream = nullptr;
  check(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<double> raw, idle, timed, idle_ratio, timed_ratio;
  const auto raw_batch = [&] {
    const auto began = clock_type::now();
    for (int i = 0; i < batch; ++i) {
      check(cudaLaunchKernel(reinterpret_cast<const void*>(&raw_nothing), dim3{1}, dim3{32}, nullptr,
                             0, raw_stream),
            "cudaLaunchKernel");
    }
    const double us = us_since(began) / batch;
    check(cudaStreamSynchronize(raw_stream), "cudaStreamSynchronize");
    return us;
  };
  const auto idle_batch = [&] {
    const auto began = clock_type::now();
    for (int i = 0; i < batch; ++i) c.launch(nothing{}, lw::cube_count{1u}, lw::cube_dim{32u});
    const double us = us_since(began) / batch;
    c.sync();
    return us;
  };
  const auto timed_batch = [&] {
    auto keeps = std::make_shared<keeper>();
    keeps->reserve(batch);
    double us = 0;
    {
      lw::launch_observation watching{keeps};
      const auto began = clock_type::now();
      for (int i = 0; i < batch; ++i) c.launch(nothing{}, lw::cube_count{1u}, lw::cube_dim{32u});
      us = us_since(began) / batch;
    }
    c.sync();
    (void)keeps->read_us();
    return us;
  };
  for (int r = -2; r < interleaved; ++r) {
    double a = 0, b = 0, d = 0;
    switch ((r + 3) % 3) {
      case 0: a = raw_batch(); b = idle_batch(); d = timed_batch(); break;
      case 1: b = idle_batch(); d = timed_batch(); a = raw_batch(); break;
      default: d = timed_batch(); a = raw_batch(); b = idle_batch(); break;
    }
    if (r < 0) continue;
    raw.push_back(a);
    idle.push_back(b);
    timed.push_back(d);
    idle_ratio.push_back(b / a);
    timed_ratio.push_back(d / a);
  }
  std::printf("\n[host] issue cost per empty launch, %d interleaved rounds of %d launches each\n",
              interleaved, batch);
  std::printf("  raw cudaLaunchKernel           %8.3f us  1.000x\n", median(raw));
  std::printf("  client.launch, untimed         %8.3f us  %.3fx raw  p10-p90 %.3f-%.3f\n", median(idle),
              median(idle_ratio), percentile(idle_ratio, 0.1), percentile(idle_ratio, 0.9));
  std::printf("  client.launch, deferred        %8.3f us  %.3fx raw  p10-p90 %.3f-%.3f\n", median(timed),
              median(timed_ratio), percentile(timed_ratio, 0.1), percentile(timed_ratio, 0.9));
  check(cudaStreamDestroy(raw_stream), "cudaStreamDestroy");
}

/// A launch source that submits nothing: what the launch path's own routing costs.
class routed_only final : public lw::launch_path::submitter {
 public:
  void submit() override {}
  lw::launch_path::measured_submission submit_profiled(lw::launch_path::read_when) override {
    const auto now = clock_type::now();
    return {lw::profile_duration::from_system_time(now, now), {}};
  }
};

class names_only final : public lw::launch_observer {
 public:
  void launched(std::string_view) override {}
};

/// Where a deferred launch's host time goes, part by part, each timed on its own in this run: the
/// launch path's routing for a names-only and a deferred observer (no submission), and the timing
/// collector's acquire and batch close (no launch).
void host_breakdown(int rounds) {
  namespace lwc = lw::detail::cuda;
  constexpr int batch = 20'000;
  lw::launch_info info;
  info.kernel = "breakdown";
  info.backend = "cuda";
  std::vector<double> route_names, route_deferred, acquire;
  lwc::timing_collector collector{0, std::make_shared<lwc::device_health>(0),
                                  lwc::timing_collector::default_slots};
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  for (int r = -1; r < rounds; ++r) {
    routed_only source;
    {
      lw::launch_observation watching{std::make_shared<names_only>()};
      const auto began = clock_type::now();
      for (int i = 0; i < batch; ++i) lw::launch_path::issue(info, source);
      if (r >= 0) route_names.push_back(us_since(began) * 1000.0 / batch);
    }
    auto keeps = std::make_shared<keeper>();
    keeps->reserve(batch);
    {
      lw::launch_observation watching{keeps};
      const auto began = clock_type::now();
      for (int i = 0; i < batch; ++i) lw::launch_path::issue(info, source);
      if (r >= 0) route_deferred.push_back(us_since(began) * 1000.0 / batch);
    }
    (void)keeps->read_us();
    std::shared_ptr<lwc::timing_batch> open;
    std::vector<lwc::timing_record*> records;
    records.reserve(1024);
    double spent = 0;
    for (int done = 0; done < batch; done += 1024) {
      const auto began = clock_type::now();
      for (int i = 0; i < 1024; ++i) {
        auto lease = collector.acquire(open, stream, clock_type::now());
        if (!lease) break;
        if (lease->filled) collector.close(lease->filled);
        records.push_back(lease->record);
      }
      spent += us_since(began);
      if (open) collector.close(open);
      open.reset();
      for (auto* record : records) {
        (void)collector.wait(*record, "breakdown");
        collector.let_go(record);
      }
      records.clear();
    }
    if (r >= 0) acquire.push_back(spent * 1000.0 / batch);
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  std::printf("\n[host breakdown] per launch, %d rounds of %d, no kernel launched\n", rounds, batch);
  std::printf("  launch path, names-only observer           %8.1f ns  p10-p90 %.1f-%.1f\n",
              median(route_names), percentile(route_names, 0.1), percentile(route_names, 0.9));
  std::printf("  launch path, deferred observer (kept)      %8.1f ns  (+%.1f over names-only)  p10-p90 %.1f-%.1f\n",
              median(route_deferred), median(route_deferred) - median(route_names),
              percentile(route_deferred, 0.1), percentile(route_deferred, 0.9));
  std::printf("  timing collector: clock read, acquire, close %6.1f ns  p10-p90 %.1f-%.1f\n",
              median(acquire), percentile(acquire, 0.1), percentile(acquire, 0.9));
}

void fidelity(lw::client& c, double cpus) {
  auto out = c.empty<float>(1);
  const std::vector<shape> shapes{
      {"0 us x 1 cube", 1, 128, 0, false, 300},     {"0 us x 132 cubes", 132, 128, 0, false, 300},
      {"5 us x 1 cube", 1, 128, static_cast<long long>(5 * cpus), false, 300},
      {"5 us x 132 cubes", 132, 128, static_cast<long long>(5 * cpus), false, 300},
      {"50 us x 1 cube", 1, 128, static_cast<long long>(50 * cpus), false, 100},
      {"50 us x 132 cubes", 132, 128, static_cast<long long>(50 * cpus), false, 100},
  };
  // CUPTI first, on untimed launches; detached before launchwatch times the same shapes, so CUPTI's
  // instrumentation is in neither measurement of launchwatch.
  std::vector<double> cupti_us;
  std::vector<std::pair<double, double>> cupti_spread;  // p10, p90 of each shape's kernels
  {
    lw::peers::cupti_kernel_tracer tracer;
    tracer.enable(true);
    for (const auto& s : shapes) {
      (void)pass_us(c, s, out);
      tracer.flush();
      std::vector<double> d;
      for (const auto& rec : tracer.take_records()) {
        if (rec.name != nullptr && std::strstr(rec.name, "spin_cycles") != nullptr) {
          d.push_back(static_cast<double>(rec.end_ns - rec.start_ns) / 1000.0);
        }
      }
      cupti_us.push_back(median(d));
      cupti_spread.push_back({percentile(d, 0.1), percentile(d, 0.9)});
    }
    tracer.disable();
  }
  lw::peers::cupti_detach_process();
  std::printf("\n[fidelity] median duration, launchwatch deferred vs CUPTI's record of the kernel run untimed\n");
  std::printf("%-20s %10s %12s %10s %10s %8s   %-15s %-15s\n", "shape", "CUPTI us", "launchwatch",
              "diff us", "bound us", "", "CUPTI p10-p90", "lw p10-p90");
  std::vector<double> implied;
  const char* configured = std::getenv("LAUNCHWATCH_CUDA_GRID_OVERHEAD_NS");
  (void)configured;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    auto keeps = std::make_shared<keeper>();
    {
      lw::launch_observation watching{keeps};
      (void)pass_us(c, shapes[k], out);
    }
    const std::vector<double> durations = keeps->read_us();
    const double mine = median(durations);
    const double diff = mine - cupti_us[k];
    const double bound = std::max(0.02 * cupti_us[k], 0.2);
    implied.push_back(diff);
    std::printf("%-20s %10.3f %12.3f %+10.3f %10.3f %8s   %6.3f-%-8.3f %6.3f-%-8.3f\n",
                shapes[k].label.c_str(), cupti_us[k], mine, diff, bound,
                std::abs(diff) <= bound ? "within" : "OUTSIDE", cupti_spread[k].first,
                cupti_spread[k].second, percentile(durations, 0.1), percentile(durations, 0.9));
  }
  std::printf("  (launchwatch adds the device's grid overhead; a diff d here means the overhead that\n"
              "   would match CUPTI is the configured one minus d)\n");
  std::printf("  median diff over shapes: %+.3f us\n", median(implied));
}

void long_pass(lw::client& c, long long launches) {
  std::size_t free_before = 0, total = 0, free_after = 0;
  check(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo");
  const auto began = clock_type::now();
  std::size_t free_during = free_before;
  auto pass = lw::attribute_pass([&] {
    for (long long i = 0; i < launches; ++i) {
      c.launch(nothing{}, lw::cube_count{1u}, lw::cube_dim{32u});
      if (i % 1'000'000 == 999'999) {
        std::size_t f = 0, t = 0;
        check(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
        free_during = std::min(free_during, f);
      }
    }
    c.sync();
  });
  check(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo");
  std::size_t timed = 0;
  for (const auto& l : pass.launches) timed += l.timing.has_value() ? 1 : 0;
  std::printf("\n[long] one attribute_pass of %lld deferred-timed launches: %.1f s, %zu launches "
              "recorded, %zu with a device window; device memory in use grew by at most %.1f MiB "
              "during the pass\n",
              launches, us_since(began) / 1e6, pass.launches.size(), timed,
              static_cast<double>(free_before - free_during) / (1024.0 * 1024.0));
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  long long long_launches = 0;
  std::string backend = "cuda";
  bool host_only = false;
  for (int i = 1; i < argc; ++i) {
    const bool valued = i + 1 < argc;
    if (std::strcmp(argv[i], "--host-only") == 0) {
      host_only = true;
    } else if (valued && std::strcmp(argv[i], "--rounds") == 0) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (valued && std::strcmp(argv[i], "--long") == 0) {
      long_launches = std::atoll(argv[++i]);
    } else if (valued && std::strcmp(argv[i], "--backend") == 0) {
      backend = argv[++i];
    } else {
      std::fprintf(stderr,
                   "unknown argument `%s`; usage: launchwatch_deferred_timing_bench [--rounds R] "
                   "[--long N] [--backend cuda|hip] [--host-only]\n",
                   argv[i]);
      return 2;
    }
  }
  if (backend != "cuda" && backend != "hip") {
    std::fprintf(stderr, "--backend takes cuda or hip, not `%s`\n", backend.c_str());
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device visible: nothing measured\n");
    return 0;
  }
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, 0), "cudaGetDeviceProperties");
  auto c = backend == "hip" ? lw::client::hip() : lw::client::cuda();
  auto out = c.empty<float>(64);
  const double cpus = cycles_per_us(c, out);
  std::printf("deferred timing, %s backend, on %s (sm_%d%d, %d SMs), clock64 %.0f cycles/us\n",
              backend.c_str(), props.name, props.major, props.minor, props.multiProcessorCount,
              cpus);
  if (!host_only) wall_ratios(c, cpus, rounds);
  host_costs(c, rounds);
  if (backend == "cuda") host_breakdown(rounds);
  if (!host_only) fidelity(c, cpus);
  if (long_launches > 0) long_pass(c, long_launches);
  return 0;
}
