// What a launch costs on the Vulkan backend, side by side in one run (issue 12's targets):
//
// 1. Host time per empty-kernel launch through client.launch on Vulkan (recorded into the stream's
//    command buffer, submitted every 256 launches), against raw cudaLaunchKernel of an empty kernel
//    when the CUDA toolkit was built in: the ratio the issue asks to be within 2x. Also Vulkan with
//    a names-only observer and with deferred timing (measurements kept unread).
// 2. Back-to-back kernels on the device, untimed against deferred timing: pass time per kernel
//    (host wall from the first launch to the end of a sync, over many kernels) and, from the
//    deferred stamps, the gap between one kernel's end and the next one's start.
//
// Medians of batches; each batch is synchronised outside its timed loop.
// Usage: launchwatch_vulkan_launch_bench [--quick]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <launchwatch/launchwatch.hpp>

#include "support/launch_observers.hpp"
#include "vulkan_bench_shaders.hpp"

#if LAUNCHWATCH_BENCH_CUDA_RAW
double raw_cuda_launch_ns(int launches, int batches);
#endif

namespace {

namespace lw = launchwatch;
using clock_type = std::chrono::steady_clock;

struct empty_kernel {
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit) const {}
  static constexpr lw::vulkan_shader vulkan = lw::vulkan_bench::shaders::empty;
};

struct busy_kernel {
  lw::device_span<float> values;
  std::uint32_t rounds;
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit u) const {
    const auto i = u.absolute_pos();
    if (i >= values.size()) return;
    float x = static_cast<float>(i & 255u) * 0.001f;
    for (std::uint32_t r = 0; r < rounds; ++r) x = x * 0.999f + 0.5f;
    values[i] = x;
  }
  static constexpr lw::vulkan_shader vulkan = lw::vulkan_bench::shaders::busy;
};

using lw::bench::keeps_unread;
using lw::bench::names_only;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

/// Median host ns per launch of `launch()` over batches, with `observer` installed (or none).
template <class Launch>
double host_ns_per_launch(lw::client& on, std::shared_ptr<lw::launch_observer> observer,
                          keeps_unread* kept, int launches, int batches, Launch launch) {
  std::vector<double> per_launch;
  for (int b = 0; b < batches; ++b) {
    on.sync();
    const auto start = clock_type::now();
    {
      std::optional<lw::launch_observation> watching;
      if (observer) watching.emplace(observer);
      for (int i = 0; i < launches; ++i) launch();
    }
    const auto end = clock_type::now();
    on.sync();
    if (kept != nullptr) kept->kept_.clear();
    per_launch.push_back(std::chrono::duration<double, std::nano>(end - start).count() / launches);
  }
  return median(per_launch);
}

struct cadence {
  double untimed_ns_per_kernel = 0;
  double deferred_ns_per_kernel = 0;
  double gap_p50_ns = 0;
  double gap_p90_ns = 0;
  double kernel_p50_ns = 0;
};

/// Back-to-back launches of `launch()`: pass time per kernel untimed and deferred, and the gaps
/// between consecutive deferred windows.
template <class Launch>
cadence measure_cadence(lw::client& on, int kernels, int passes, Launch launch) {
  cadence result;
  std::vector<double> untimed, deferred, gaps, lengths;
  for (int p = 0; p < passes; ++p) {
    on.sync();
    auto start = clock_type::now();
    for (int i = 0; i < kernels; ++i) launch();
    on.sync();
    untimed.push_back(std::chrono::duration<double, std::nano>(clock_type::now() - start).count() / kernels);

    auto kept = std::make_shared<keeps_unread>();
    start = clock_type::now();
    {
      lw::launch_observation watching{kept};
      for (int i = 0; i < kernels; ++i) launch();
    }
    on.sync();
    deferred.push_back(std::chrono::duration<double, std::nano>(clock_type::now() - start).count() / kernels);
    std::vector<lw::profile_ticks> windows;
    for (auto& profile : kept->kept_) {
      if (profile.method() != lw::timing_method::device) continue;
      if (auto ticks = std::move(profile).resolve()) windows.push_back(*ticks);
    }
    for (std::size_t i = 0; i < windows.size(); ++i) {
      lengths.push_back(static_cast<double>(windows[i].length().count()));
      if (i > 0) gaps.push_back(std::chrono::duration<double, std::nano>(windows[i].start() - windows[i - 1].end()).count());
    }
  }
  result.untimed_ns_per_kernel = median(untimed);
  result.deferred_ns_per_kernel = median(deferred);
  result.gap_p50_ns = percentile(gaps, 0.5);
  result.gap_p90_ns = percentile(gaps, 0.9);
  result.kernel_p50_ns = percentile(lengths, 0.5);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int launches = quick ? 2000 : 20000;
  const int batches = quick ? 5 : 15;
  // Every deferred launch of a batch holds a timestamp pair until the batch's measurements are let
  // go: a budget smaller than a batch would time the rest `system`, which is not what is measured.
  ::setenv("LAUNCHWATCH_VULKAN_TIMESTAMPS", std::to_string(2 * launches).c_str(), 0);
  lw::client on = lw::client::vulkan();
  std::printf("launchwatch Vulkan launch bench on %s (%s)\n", on.device_name().c_str(),
              quick ? "quick" : "full");

  auto values = on.empty<float>(132 * 128);
  const auto empty = [&] { on.launch(empty_kernel{}, lw::cube_count{1}, lw::cube_dim{1}); };
  const auto busy = [&] {
    on.launch(busy_kernel{values.view(), 2000}, lw::cube_count{132}, lw::cube_dim{128});
  };
  empty();
  busy();
  on.sync();
  // The busy kernel's GLSL twin is checked against its C++ body on the CPU backend first.
  {
    lw::client cpu = lw::client::cpu();
    auto expected = cpu.empty<float>(132 * 128);
    cpu.launch(busy_kernel{expected.view(), 2000}, lw::cube_count{132}, lw::cube_dim{128});
    const auto want = cpu.read(expected);
    const auto got = on.read(values);
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[i])));
    }
    std::printf("busy kernel against the CPU backend: max difference %.2e (%s)\n", worst,
                worst <= 1e-3 ? "ok" : "MISMATCH");
    std::fflush(stdout);
    if (!(worst <= 1e-3)) return 3;
  }

  std::printf("\n[host cost per empty launch] median of %d batches of %d launches\n", batches, launches);
  const double vk_idle = host_ns_per_launch(on, nullptr, nullptr, launches, batches, empty);
  const double vk_names = host_ns_per_launch(on, std::make_shared<names_only>(), nullptr, launches, batches, empty);
  auto kept = std::make_shared<keeps_unread>();
  kept->kept_.reserve(static_cast<std::size_t>(launches));
  const double vk_deferred = host_ns_per_launch(on, kept, kept.get(), launches, batches, empty);
  std::printf("  vulkan client.launch, nothing observing   %8.3f us\n", vk_idle / 1000);
  std::printf("  vulkan client.launch, names-only observer %8.3f us\n", vk_names / 1000);
  std::printf("  vulkan client.launch, deferred timing     %8.3f us\n", vk_deferred / 1000);
#if LAUNCHWATCH_BENCH_CUDA_RAW
  const double cuda_raw = raw_cuda_launch_ns(launches, batches);
  if (cuda_raw > 0) {
    std::printf("  cuda raw cudaLaunchKernel                 %8.3f us\n", cuda_raw / 1000);
    std::printf("  ratio vulkan/cuda-raw: idle %.2fx, names-only %.2fx, deferred %.2fx (target: batched within 2x)\n",
                vk_idle / cuda_raw, vk_names / cuda_raw, vk_deferred / cuda_raw);
  } else {
    std::printf("  cuda raw cudaLaunchKernel                 no GPU answered\n");
  }
#else
  std::printf("  cuda raw cudaLaunchKernel                 not built (no CUDA toolkit)\n");
#endif

  const int kernels = quick ? 500 : 2000;
  const int passes = quick ? 3 : 7;
  // --quick is for a CPU device (lavapipe), where one busy kernel takes tens of milliseconds.
  const int busy_kernels = quick ? 10 : kernels;
  std::printf("\n[device cadence] %d back-to-back kernels (busy: %d), median of %d passes: pass time "
              "per kernel (first launch to end of sync) and deferred windows' gaps\n",
              kernels, busy_kernels, passes);
  for (const auto& [name, launch, count] :
       {std::tuple{"empty 1x1", std::function<void()>{empty}, kernels},
        std::tuple{"busy 132x128", std::function<void()>{busy}, busy_kernels}}) {
    const cadence c = measure_cadence(on, count, passes, launch);
    std::printf("  %-13s untimed %8.3f us/kernel, deferred %8.3f us/kernel (x%.2f); deferred kernel p50 "
                "%.3f us, gap end->next start p50 %.3f us p90 %.3f us\n",
                name, c.untimed_ns_per_kernel / 1000, c.deferred_ns_per_kernel / 1000,
                c.deferred_ns_per_kernel / c.untimed_ns_per_kernel, c.kernel_p50_ns / 1000,
                c.gap_p50_ns / 1000, c.gap_p90_ns / 1000);
  }
  return 0;
}
