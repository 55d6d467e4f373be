// What an empty-kernel launch costs through launchwatch's CUDA backend, side by side in one run:
// raw cudaLaunchKernel, client.launch with nothing observing, with a names-only observer, with
// deferred timing (measurements kept unread, read after the pass) and with resolved timing (each
// read before the launch returns), each as a ratio to raw.
//
// Host time per launch over batches of launches, median of the batches; a batch ends with a
// synchronisation outside the timed loop (resolved timing waits inside it, by definition).
// Usage: launchwatch_launch_cost_bench [--quick] [--only ROW]
// --only ROW launches through row ROW (its number in the table, from 0) alone for a few seconds and
// prints nothing else: a steady loop for a profiler such as `perf record` to sample.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <launchwatch/launchwatch.hpp>
#include <launchwatch/runtime/client.hpp>

#include "support/launch_observers.hpp"

namespace {

namespace lw = launchwatch;
using clock_type = std::chrono::steady_clock;

struct empty_kernel {
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit) const {}
};

__global__ void plain_empty() {}

using lw::bench::keeps_unread;
using lw::bench::names_only;

class resolves : public lw::launch_observer {
 public:
  void launched(std::string_view) override {}
  lw::timing_request timing() const override { return lw::timing_request::resolved; }
  void timed(std::string_view, std::chrono::nanoseconds length, lw::timing_method) override {
    total_ += length;
  }
  std::chrono::nanoseconds total_{};
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int only = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--only ROW]\n", argv[0]);
      return 2;
    }
  }
  lw::client client = [] {
    try {
      return lw::client::cuda();
    } catch (const lw::backend_unavailable& why) {
      std::printf("%s\nnothing to measure\n", why.what());
      std::exit(0);
    }
  }();
  std::printf("device: %s\n", client.device_name().c_str());
  const int batch = quick ? 200 : 1000;
  const int batches = only >= 0 ? 2000 : quick ? 5 : 21;
  cudaStream_t raw_stream = nullptr;
  check(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // The driver's own entry point with the function looked up once: what the runtime's
  // cudaLaunchKernel adds on top of it (finding the function of a host stub, each launch).
  cudaFunction_t plain_function = nullptr;
  cudaFunction_t entry_function = nullptr;
  cudaKernel_t entry_kernel = nullptr;  // context-free: what the backend launches
  check(cudaGetKernel(&entry_kernel, &lw::detail::cuda_entry<empty_kernel>), "cudaGetKernel");
  check(cudaGetFuncBySymbol(&plain_function, reinterpret_cast<const void*>(&plain_empty)),
        "cudaGetFuncBySymbol");
  check(cudaGetFuncBySymbol(&entry_function,
                            reinterpret_cast<const void*>(&lw::detail::cuda_entry<empty_kernel>)),
        "cudaGetFuncBySymbol");
  const lw::detail::cuda_timing_target no_slot;  // the entry's untimed launch
  lw::detail::cuda_timing_target stamping;  // one slot, stamped by every launch of its row
  check(cudaMalloc(reinterpret_cast<void**>(&stamping.slot), sizeof(*stamping.slot)), "cudaMalloc");
  check(cudaMemset(stamping.slot, 0, sizeof(*stamping.slot)), "cudaMemset");
  const auto driver_launch = [&](cudaFunction_t function, void** args) {
    if (cuLaunchKernel(reinterpret_cast<CUfunction>(function), 1, 1, 1, 1, 1, 1, 0,
                       reinterpret_cast<CUstream>(raw_stream), args, nullptr) != CUDA_SUCCESS) {
      std::fprintf(stderr, "cuLaunchKernel failed\n");
      std::exit(1);
    }
  };

  enum variant {
    raw,
    raw_entry,
    raw_entry_stamping,
    driver_plain,
    driver_entry,
    driver_entry_kernel,
    idle,
    names,
    deferred,
    resolved,
    count
  };
  const char* labels[count] = {"raw cudaLaunchKernel (plain empty kernel)",
                               "raw cudaLaunchKernel (launchwatch's entry)",
                               "raw cudaLaunchKernel (entry, stamping a slot)",
                               "cuLaunchKernel, function cached (plain)",
                               "cuLaunchKernel, function cached (entry)",
                               "cuLaunchKernel, context-free kernel (entry)",
                               "client.launch, nothing observing",
                               "client.launch, names-only observer",
                               "client.launch, deferred timing",
                               "client.launch, resolved timing"};
  std::vector<double> per_launch[count];
  if (only >= count) {
    std::fprintf(stderr, "--only %d: there are %d rows, 0 to %d\n", only, int{count}, count - 1);
    return 2;
  }

  auto keeper = std::make_shared<keeps_unread>();
  for (int b = -2; b < batches; ++b) {  // two warm-up batches
    for (int v = 0; v < count; ++v) {
      if (only >= 0 && v != only) continue;
      std::optional<lw::launch_observation> watching;
      if (v == names) watching.emplace(std::make_shared<names_only>());
      if (v == deferred) watching.emplace(keeper);
      if (v == resolved) watching.emplace(std::make_shared<resolves>());
      const auto began = clock_type::now();
      for (int i = 0; i < batch; ++i) {
        switch (v) {
          case raw: {
            void* args[] = {nullptr};
            check(cudaLaunchKernel(reinterpret_cast<const void*>(&plain_empty), 1, 1, args, 0,
                                   raw_stream),
                  "cudaLaunchKernel");
            break;
          }
          case raw_entry:
          case raw_entry_stamping: {
            empty_kernel k;
            lw::detail::cuda_timing_target t = v == raw_entry_stamping ? stamping : no_slot;
            void* args[] = {&k, &t};
            check(cudaLaunchKernel(
                      reinterpret_cast<const void*>(&lw::detail::cuda_entry<empty_kernel>), 1, 1,
                      args, 0, raw_stream),
                  "cudaLaunchKernel");
            break;
          }
          case driver_plain: {
            void* args[] = {nullptr};
            driver_launch(plain_function, args);
            break;
          }
          case driver_entry:
          case driver_entry_kernel: {
            empty_kernel k;
            lw::detail::cuda_timing_target t = no_slot;
            void* args[] = {&k, &t};
            driver_launch(
                v == driver_entry ? entry_function : reinterpret_cast<cudaFunction_t>(entry_kernel),
                args);
            break;
          }
          default:
            client.launch(empty_kernel{}, lw::cube_count{1}, lw::cube_dim{1});
        }
      }
      const double us = std::chrono::duration<double, std::micro>(clock_type::now() - began).count();
      watching.reset();
      check(cudaStreamSynchronize(raw_stream), "cudaStreamSynchronize");
      client.sync();
      for (auto& p : keeper->kept_) (void)std::move(p).resolve();
      keeper->kept_.clear();
      if (b >= 0) per_launch[v].push_back(us / batch);
    }
  }

  check(cudaFree(stamping.slot), "cudaFree");
  if (only >= 0) return 0;
  std::printf("\n==== launch cost per empty kernel (host, median of %d batches of %d) ====\n",
              batches, batch);
  std::printf("%-44s | %9s | %s\n", "path", "us/launch", "x raw");
  const double base = median(per_launch[raw]);
  for (int v = 0; v < count; ++v) {
    const double m = median(per_launch[v]);
    std::printf("%-44s | %9.3f | %5.2f\n", labels[v], m, m / base);
  }
  return 0;
}
