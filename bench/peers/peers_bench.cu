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
//
// The measurements are launch_cost.cu, perturbation.cu and fidelity.cu, sharing peers_harness.hpp,
// peers_kernels.cuh and peers_observers.hpp; report.cpp renders the results. This file reads the
// options and runs the measurements in order.

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <launchwatch/runtime/client.hpp>

#include "cupti_peers.hpp"
#include "peers_harness.hpp"
#include "results.hpp"

namespace launchwatch::peers {
namespace {

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
