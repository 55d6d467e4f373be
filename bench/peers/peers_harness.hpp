// What every measurement of the peers harness shares: the run's options and state, the step it is
// in (for the watchdog), CUDA error checks, and the measurements' entry points.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <launchwatch/runtime/client.hpp>

#include "cupti_peers.hpp"
#include "results.hpp"

namespace launchwatch::peers {

using clock_type = std::chrono::steady_clock;

// What the harness is doing now, for the watchdog's message if the run hangs.
inline std::atomic<const char*> current_step{"starting"};

inline double ns_between(clock_type::time_point from, clock_type::time_point to) {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

inline void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error{std::string{call} + " failed: " + cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status)};
  }
}

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

// ---------------------------------------------------------------------------------------------
// The measurements, one file each, run in this order by peers_bench.cu.

// 1. Launch cost (launch_cost.cu). Phase clean: every case but CUPTI's, in a process that has never
// called CUPTI. Phase one: every case in one interleaved set. Phase cupti: the CUPTI peers beside
// raw launches and launchwatch again.
void measure_launch_cost_clean(harness& h);
void measure_launch_cost_one_phase(harness& h);
void measure_launch_cost_cupti(harness& h);

// 2. Device perturbation (perturbation.cu): the spin a raw spin kernel needs to run back to back
// at about `target_ns` a kernel, and each way of timing's effect on such a pass.
std::uint64_t calibrate_spin(harness& h, double target_ns);
void measure_perturbation(harness& h, const std::vector<std::pair<double, std::uint64_t>>& spins);

// 3. Fidelity (fidelity.cu): each side's timings of the same kernels against CUPTI's records.
struct fidelity_spec {
  std::string kernel;         // "empty", "5us", "50us"
  std::uint64_t spin_ns = 0;  // 0: the empty kernel
  double target_ns = 0;
  std::size_t kernels = 0;
};
void measure_fidelity(harness& h, const std::vector<fidelity_spec>& specs, int passes);

}  // namespace launchwatch::peers
