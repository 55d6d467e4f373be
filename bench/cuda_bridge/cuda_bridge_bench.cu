// What the CUDA bridge costs a program's own launches (an empty `<<<>>>` kernel), host time per
// launch, measured side by side in one run:
//   raw            no bridge, CUPTI never called in the process yet
//   bridge idle    a cuda_bridge lives, nothing observes (its launch callbacks are off)
//   names only     an observer that counts `launched_with` (callbacks on, no timing)
//   deferred       an observer keeping every measurement unread (CUPTI kernel records)
//   resolved       an observer told each duration (two events and a wait per launch)
//   windows 20/80  deferred under cuda_timing_windows{20 ms, 80 ms} (a bridge of its own): kernel
//                  records on for 20 ms of every 100, launches between them names only
//   after          the bridge destroyed (cuptiFinalize): should be raw again
//   CUPTI floor    no bridge: the bench's own CUPTI subscriber, with the same driver launch
//                  callbacks as the bridge's (returning at once) and concurrent-kernel records on,
//                  buffers handed back unread: what any CUPTI tool pays for deferred kernel times,
//                  so `deferred` minus this is the bridge's own share
//   CUPTI callbacks the same without the records: what any CUPTI tool pays to be called at each
//                  launch, so `names only` minus this is the bridge's own share of a names-only one
// Each round makes a fresh bridge, so a round's idle and names-only cases run before its deferred
// case turns CUPTI's kernel records on. Medians over the rounds; deltas and ratios against raw.
//
// Raw and `after` cannot run while a bridge lives, so beside the deltas of medians against raw the
// table gives each case's paired delta against `bridge idle` of the same round (idle is raw with
// CUPTI subscribed and nothing enabled), the steadier of the two on a machine whose raw launch
// cost drifts by ±0.3 µs between rounds.
//
// Usage: launchwatch_cuda_bridge_bench [launches per case, default 20000] [rounds, default 9]
#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/launchwatch.hpp>

#include "support/launch_observers.hpp"

#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>


namespace {

using clock_type = std::chrono::steady_clock;

__global__ void empty_kernel() {}

/// Host microseconds per launch of `count` empty kernels on `stream`, the launches alone.
double launch_loop(cudaStream_t stream, int count) {
  const auto start = clock_type::now();
  for (int i = 0; i < count; ++i) empty_kernel<<<1, 1, 0, stream>>>();
  const auto end = clock_type::now();
  (void)cudaStreamSynchronize(stream);
  return std::chrono::duration<double, std::micro>(end - start).count() / count;
}

class counter final : public launchwatch::launch_observer {
 public:
  void launched(std::string_view) override {}
  void launched_with(const launchwatch::launch_info&) override {
    count.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<long> count{0};
};

/// launch_loop() with an observer keeping every measurement unread; then reads them, counting
/// into `resolved` and `missing` (a launch refused a measurement hands over none).
double deferred_loop(cudaStream_t stream, int count, long& resolved, long& missing) {
  auto kept =
      std::make_shared<launchwatch::bench::keeps_unread_locked>(static_cast<std::size_t>(count));
  double us = 0;
  {
    launchwatch::launch_observation watching{kept};
    us = launch_loop(stream, count);
  }
  for (auto& profile : kept->kept_) {
    if (std::move(profile).resolve()) {
      ++resolved;
    } else {
      ++missing;
    }
  }
  return us;
}

class resolver final : public launchwatch::launch_observer {
 public:
  void launched(std::string_view) override {}
  launchwatch::timing_request timing() const override {
    return launchwatch::timing_request::resolved;
  }
  void timed(std::string_view, std::chrono::nanoseconds length, launchwatch::timing_method) override {
    total += length;
    ++count;
  }
  std::chrono::nanoseconds total{0};
  long count = 0;
};

void CUPTIAPI floor_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void CUPTIAPI floor_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr std::size_t bytes = std::size_t{2} << 20;  // the bridge's buffer size
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, bytes));
  *size = *buffer != nullptr ? bytes : 0;
  *max_records = 0;
}

void CUPTIAPI floor_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  std::free(buffer);
}

/// One launch loop under CUPTI alone (see "CUPTI floor" above; `records`: with the kernel records,
/// else the callbacks alone); then CUPTI is given back as the bridge gives it back. Returns a
/// negative time when CUPTI would not start.
double cupti_floor_loop(cudaStream_t stream, int count, bool records) {
  CUpti_SubscriberHandle subscriber = nullptr;
  if (cuptiSubscribe(&subscriber, &floor_callback, nullptr) != CUPTI_SUCCESS) return -1;
  constexpr CUpti_CallbackId ids[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
  for (const auto id : ids) (void)cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  if (records) {
    (void)cuptiActivityRegisterCallbacks(&floor_buffer_requested, &floor_buffer_completed);
    (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  const double us = launch_loop(stream, count);
  if (records) {
    (void)cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  (void)cuptiUnsubscribe(subscriber);
  (void)cuptiFinalize();
  return us;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to measure\n");
    return 0;
  }
  cudaDeviceProp properties{};
  (void)cudaGetDeviceProperties(&properties, 0);
  cudaStream_t stream = nullptr;
  (void)cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  (void)launch_loop(stream, 2000);  // module load, first-launch costs

  std::map<std::string, std::vector<double>> us;
  std::vector<double>& raw = us["raw"];
  for (int r = 0; r < rounds; ++r) raw.push_back(launch_loop(stream, launches));

  long missing = 0;
  long delivered = 0;
  long windowed_launches = 0;
  long windowed_timed = 0;
  long windowed_missing = 0;
  for (int r = 0; r < rounds; ++r) {
    try {
      launchwatch::cuda_bridge bridge;
      us["bridge idle"].push_back(launch_loop(stream, launches));
      {
        auto names = std::make_shared<counter>();
        launchwatch::launch_observation watching{names};
        us["names only"].push_back(launch_loop(stream, launches));
      }
      us["deferred"].push_back(deferred_loop(stream, launches, delivered, missing));
      {
        auto timed = std::make_shared<resolver>();
        launchwatch::launch_observation watching{timed};
        us["resolved"].push_back(launch_loop(stream, launches / 4));
      }
    } catch (const launchwatch::cuda_bridge_unavailable& why) {
      std::printf("the bridge is unavailable: %s\n", why.what());
      return 0;
    }
    {
      // A bridge of its own: one bridge's options hold while it lives.
      launchwatch::cuda_bridge_options windowed;
      windowed.timing_windows = launchwatch::cuda_timing_windows{std::chrono::milliseconds{20},
                                                                 std::chrono::milliseconds{80}};
      launchwatch::cuda_bridge bridge{windowed};
      us["windows 20/80"].push_back(
          deferred_loop(stream, launches, windowed_timed, windowed_missing));
      windowed_launches += launches;
    }
    us["after"].push_back(launch_loop(stream, launches));
    const double floor_us = cupti_floor_loop(stream, launches, true);
    if (floor_us > 0) us["CUPTI floor"].push_back(floor_us);
    const double callbacks_us = cupti_floor_loop(stream, launches, false);
    if (callbacks_us > 0) us["CUPTI callbacks"].push_back(callbacks_us);
  }

  const double base = median(raw);
  std::printf("CUDA bridge, host time per empty <<<>>> launch, %s, %d launches x %d rounds "
              "(medians)\n\n",
              properties.name, launches, rounds);
  std::printf("%-12s %10s %10s %8s %12s  %s\n", "case", "us/launch", "vs raw us", "ratio",
              "vs idle us", "target");
  const struct {
    const char* name;
    const char* target;
    double limit_us;
  } cases[] = {{"raw", "", 0},
               {"bridge idle", "within noise of raw", 0.1},
               {"names only", "<= +0.5 us", 0.5},
               {"deferred", "<= +1.0 us", 1.0},
               {"resolved", "(blocks per launch)", -1},
               {"windows 20/80", "(deferred inside 20 ms of every 100, names only between)", -1},
               {"after", "within noise of raw", 0.1},
               {"CUPTI floor", "(no bridge: CUPTI's callbacks and records alone)", -1},
               {"CUPTI callbacks", "(no bridge: CUPTI's launch callbacks alone, no records)", -1}};
  for (const auto& c : cases) {
    const double m = median(us[c.name]);
    // Paired with the same round's idle case, for the cases measured while the bridge lived.
    std::string paired = "";
    if (us[c.name].empty()) continue;
    const bool with_bridge = std::string{c.name} != "raw" && std::string{c.name} != "after";
    if (with_bridge) {
      std::vector<double> deltas;
      for (std::size_t r = 0; r < us[c.name].size(); ++r) {
        deltas.push_back(us[c.name][r] - us["bridge idle"][r]);
      }
      char text[32];
      std::snprintf(text, sizeof text, "%+.3f", median(deltas));
      paired = text;
    }
    std::string verdict;
    if (c.limit_us > 0) verdict = m - base <= c.limit_us ? " ok" : " MISSED (vs raw)";
    std::printf("%-12s %10.3f %+10.3f %8.2f %12s  %s%s\n", c.name, m, m - base, m / base,
                paired.c_str(), c.target, verdict.c_str());
  }
  // Each case minus the floor CUPTI sets for it, the same round: the bridge's own share.
  const auto share = [&](const char* name, const char* floor, const char* what) {
    std::vector<double> deltas;
    for (std::size_t r = 0; r < us[floor].size() && r < us[name].size(); ++r) {
      deltas.push_back(us[name][r] - us[floor][r]);
    }
    if (!deltas.empty()) {
      std::printf("%s minus the %s, same round (%s): %+.3f us\n", name, floor, what,
                  median(deltas));
    }
  };
  std::printf("\n");
  share("deferred", "CUPTI floor", "the bridge's own share");
  share("names only", "CUPTI callbacks", "the bridge's own share of a names-only launch");
  std::printf("\ndeferred measurements: %ld resolved, %ld missing\n", delivered, missing);
  std::printf("timing windows 20/80: %ld of %ld launches timed (%.1f%%), %ld missing\n", windowed_timed,
              windowed_launches,
              windowed_launches == 0 ? 0.0 : 100.0 * static_cast<double>(windowed_timed) /
                                                 static_cast<double>(windowed_launches),
              windowed_missing);
  // The bridge asks the driver (cuStreamIsCapturing) whether each reported launch's stream is
  // capturing: what that question costs alone, through the runtime's wrapper of it.
  {
    constexpr int asks = 200000;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const auto start = clock_type::now();
    for (int i = 0; i < asks; ++i) (void)cudaStreamIsCapturing(stream, &status);
    const auto end = clock_type::now();
    std::printf("cudaStreamIsCapturing, asked alone: %.1f ns a call\n",
                std::chrono::duration<double, std::nano>(end - start).count() / asks);
  }
  std::printf("raw per round:");
  for (const double v : raw) std::printf(" %.3f", v);
  std::printf("\nafter per round:");
  for (const double v : us["after"]) std::printf(" %.3f", v);
  std::printf("\n");
  (void)cudaStreamDestroy(stream);
  return 0;
}
