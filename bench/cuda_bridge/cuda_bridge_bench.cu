// What the CUDA bridge costs a program's own launches (an empty `<<<>>>` kernel), host time per
// launch, measured side by side in one run:
//   raw            no bridge, CUPTI never called in the process yet
//   bridge idle    a cuda_bridge lives, nothing observes (its launch callbacks are off)
//   names only     an observer that counts `launched_with` (callbacks on, no timing)
//   deferred       an observer keeping every measurement unread (CUPTI kernel records); its
//                  first launch turns the records on, inside the timed loop, as a job's first
//                  timed launch does once
//   deferred, records on  the same under a bridge whose records were on before the loop
//                  (trace_kernels_from_start): a long job's steady state, compared with the floors
//   resolved       an observer told each duration (two events and a wait per launch)
//   windows 20/80  deferred under cuda_timing_windows{20 ms, 80 ms} (a bridge of its own): kernel
//                  records on for 20 ms of every 100, launches between them names only
//   names only, made as run  / deferred, made as run  the same two under a bridge made inside
//                  cuInit as `launchwatch run` makes it (here: under the same guard, with no
//                  capture in progress), so it sees every capture begin and does not ask the driver
//                  at each launch whether its stream is capturing, as a bridge made later must;
//                  with the bridge's default options (run's per-node graph replays also turn kernel
//                  records on from the start, as `deferred, records on` has them)
//   after          the bridge destroyed (cuptiFinalize): should be raw again
//   CUPTI floor    no bridge: the bench's own CUPTI subscriber, with the same driver launch
//                  callbacks as the bridge's (returning at once) and concurrent-kernel records on,
//                  buffers handed back unread: what any CUPTI tool pays for deferred kernel times,
//                  so `deferred` minus this is the bridge's own share. Its buffers come zeroed from
//                  a pool, as the bridge's do, with CUPTI told so (it would otherwise zero each
//                  fresh buffer on the launching thread, a cost no careful tool need pay)
//   CUPTI callbacks the same without the records: what any CUPTI tool pays to be called at each
//                  launch, so `names only` minus this is the bridge's own share of a names-only one
//   CUPTI floor, read  the floor with each buffer's records read (cuptiActivityGetNextRecord) as
//                  CUPTI hands it back, as a tool that uses its records must
//   CUPTI floor, read and flushed  and a thread asking CUPTI for completed buffers every 10 ms
//                  (cuptiActivityFlushAll(0)), as the bridge's collector does while a measurement
//                  is awaited: the floor of a tool that hands its records over while the job runs
// Each round makes a fresh bridge, so a round's idle and names-only cases run before its deferred
// case turns CUPTI's kernel records on; each round runs its bridges and floors in another order.
// Medians over the rounds; deltas and ratios against raw.
//
// Raw and `after` cannot run while a bridge lives, so beside the deltas of medians against raw the
// table gives each case's paired delta against `bridge idle` of the same round (idle is raw with
// CUPTI subscribed and nothing enabled), the steadier of the two on a machine whose raw launch
// cost drifts by ±0.3 µs between rounds.
//
// Usage: launchwatch_cuda_bridge_bench [launches per case, default 20000] [rounds, default 9]
//            [blocks, default all: a comma-separated list of bridge, as-run, windows, records-on,
//             floor, callbacks, floor-read, floor-flushed; for a profile of some cases alone]
#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/launchwatch.hpp>

#include "cuda_bridge/activity_buffer_pool.hpp"
#include "cuda_bridge/inside_cuda_init.hpp"
#include "support/launch_observers.hpp"

#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>


namespace {

using clock_type = std::chrono::steady_clock;

__global__ void empty_kernel() {}

/// Host microseconds per launch of `count` empty kernels on `stream`, the launches alone. Never
/// inlined, so a profile's stacks say which samples are the launches (perf_cases.py).
__attribute__((noinline)) double launch_loop(cudaStream_t stream, int count) {
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

/// The floor's buffers: zeroed ones from a pool, with CUPTI told so (set_zeroed_buffers), as the
/// bridge gives them (activity_buffer_pool.hpp), so the floor is the cheapest CUPTI-records tool
/// and not one paying CUPTI's zeroing of each fresh buffer on the launching thread.
launchwatch::detail::cuda_bridge::activity_buffer_pool& floor_buffers() {
  static auto* const pool =
      new launchwatch::detail::cuda_bridge::activity_buffer_pool{std::size_t{2} << 20, 8};
  return *pool;
}

void set_zeroed_buffers() {
  std::uint8_t zeroed = 1;
  std::size_t size = sizeof zeroed;
  (void)cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed);
}

void CUPTIAPI floor_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = floor_buffers().take();
  *size = *buffer != nullptr ? floor_buffers().buffer_bytes() : 0;
  *max_records = 0;
}

void CUPTIAPI floor_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (!floor_buffers().give_back(buffer, valid)) std::free(buffer);
}

/// What floor_buffer_read read: kept, so the reading is not optimised out.
std::atomic<long> floor_records_read{0};
std::atomic<std::uint64_t> floor_checksum{0};

void CUPTIAPI floor_buffer_read(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  long kernels = 0;
  std::uint64_t sum = 0;
  CUpti_Activity* record = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    sum += kernel->correlationId + (kernel->end - kernel->start);
    ++kernels;
  }
  floor_records_read.fetch_add(kernels, std::memory_order_relaxed);
  floor_checksum.fetch_xor(sum, std::memory_order_relaxed);
  if (!floor_buffers().give_back(buffer, valid)) std::free(buffer);
}

/// What the floor's CUPTI subscriber does beside returning from its launch callbacks.
struct floor_kind {
  bool records = false;  ///< concurrent-kernel records on
  bool read = false;     ///< each buffer's records read as it comes back
  bool flushed = false;  ///< cuptiActivityFlushAll(0) every 10 ms from another thread
};

/// Milliseconds cuptiActivityEnable(CONCURRENT_KERNEL) took, each time a floor turned it on.
std::vector<double> enable_ms;

/// One launch loop under CUPTI alone (see "CUPTI floor" above); then CUPTI is given back as the
/// bridge gives it back. Returns a negative time when CUPTI would not start.
double cupti_floor_loop(cudaStream_t stream, int count, floor_kind kind) {
  CUpti_SubscriberHandle subscriber = nullptr;
  if (cuptiSubscribe(&subscriber, &floor_callback, nullptr) != CUPTI_SUCCESS) return -1;
  constexpr CUpti_CallbackId ids[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
  for (const auto id : ids) (void)cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  if (kind.records) {
    floor_buffers().fill(4);
    set_zeroed_buffers();
    (void)cuptiActivityRegisterCallbacks(&floor_buffer_requested,
                                         kind.read ? &floor_buffer_read : &floor_buffer_completed);
    const auto start = clock_type::now();
    (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    enable_ms.push_back(
        std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
  }
  std::atomic<bool> done{false};
  std::thread flusher;
  if (kind.flushed) {
    flusher = std::thread{[&done] {
      while (!done.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
        (void)cuptiActivityFlushAll(0);
      }
    }};
  }
  const double us = launch_loop(stream, count);
  done.store(true, std::memory_order_relaxed);
  if (flusher.joinable()) flusher.join();
  if (kind.records) {
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
  const std::string only = argc > 3 ? std::string{","} + argv[3] + "," : std::string{};
  if (launches < 4 || rounds < 1) {
    std::fprintf(stderr,
                 "usage: %s [launches per case, at least 4] [rounds, at least 1] [blocks]\n",
                 argv[0]);
    return 2;
  }
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
  // A round's blocks, each a bridge's life (or CUPTI's alone); every round starts at another
  // block, so none always runs after the same one: launches get slower over a run of CUPTI
  // sessions (`after` drifts up round by round), which a fixed order would charge to the blocks
  // that come last.
  bool unavailable = false;
  const std::function<void()> main_bridge = [&] {
    {
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
    }
    us["after"].push_back(launch_loop(stream, launches));
  };
  const std::function<void()> as_run_bridge = [&] {
    // What the guard changes is the bridge's knowledge that it saw every capture begin (true
    // here: the bench never captures), and that it asks the CUDA runtime nothing while made.
    std::optional<launchwatch::cuda_bridge> bridge;
    {
      const launchwatch::detail::cuda_bridge::inside_cuda_init as_run;
      bridge.emplace();
    }
    {
      auto names = std::make_shared<counter>();
      launchwatch::launch_observation watching{names};
      us["names only, made as run"].push_back(launch_loop(stream, launches));
    }
    us["deferred, made as run"].push_back(deferred_loop(stream, launches, delivered, missing));
  };
  const std::function<void()> windowed_bridge = [&] {
    // A bridge of its own: one bridge's options hold while it lives.
    launchwatch::cuda_bridge_options windowed;
    windowed.timing_windows = launchwatch::cuda_timing_windows{std::chrono::milliseconds{20},
                                                               std::chrono::milliseconds{80}};
    launchwatch::cuda_bridge bridge{windowed};
    us["windows 20/80"].push_back(
        deferred_loop(stream, launches, windowed_timed, windowed_missing));
    windowed_launches += launches;
  };
  const std::function<void()> from_start_bridge = [&] {
    launchwatch::cuda_bridge_options from_start;
    from_start.trace_kernels_from_start = true;
    launchwatch::cuda_bridge bridge{from_start};
    us["deferred, records on"].push_back(deferred_loop(stream, launches, delivered, missing));
  };
  const auto floor = [&](const char* name, floor_kind kind) {
    return std::function<void()>{[&us, &stream, launches, name, kind] {
      if (const double floor_us = cupti_floor_loop(stream, launches, kind); floor_us > 0) {
        us[name].push_back(floor_us);
      }
    }};
  };
  const std::vector<std::pair<const char*, std::function<void()>>> all_blocks = {
      {"bridge", main_bridge},
      {"as-run", as_run_bridge},
      {"windows", windowed_bridge},
      {"records-on", from_start_bridge},
      {"floor", floor("CUPTI floor", {true, false, false})},
      {"callbacks", floor("CUPTI callbacks", {false, false, false})},
      {"floor-read", floor("CUPTI floor, read", {true, true, false})},
      {"floor-flushed", floor("CUPTI floor, read and flushed", {true, true, true})}};
  std::vector<std::function<void()>> blocks;
  for (const auto& [name, block] : all_blocks) {
    if (only.empty() || only.find(std::string{","} + name + ",") != std::string::npos) {
      blocks.push_back(block);
    }
  }
  for (std::size_t at = 1; at < only.size();) {  // every name given must be a block's
    const std::size_t end = only.find(',', at);
    const std::string name = only.substr(at, end - at);
    if (std::none_of(all_blocks.begin(), all_blocks.end(),
                     [&](const auto& block) { return name == block.first; })) {
      std::string known;
      for (const auto& block : all_blocks)
        known += std::string{known.empty() ? "" : ", "} + block.first;
      std::fprintf(stderr, "no block is named '%s' (%s)\n", name.c_str(), known.c_str());
      return 2;
    }
    at = end + 1;
  }
  for (int r = 0; r < rounds && !unavailable; ++r) {
    for (std::size_t i = 0; i < blocks.size() && !unavailable; ++i) {
      try {
        blocks[(static_cast<std::size_t>(r) + i) % blocks.size()]();
      } catch (const launchwatch::cuda_bridge_unavailable& why) {
        std::printf("the bridge is unavailable: %s\n", why.what());
        unavailable = true;
      }
    }
  }
  if (unavailable) return 0;

  const double base = median(raw);
  std::printf("CUDA bridge, host time per empty <<<>>> launch, %s, %d launches x %d rounds "
              "(medians)\n\n",
              properties.name, launches, rounds);
  std::printf("%-29s %10s %10s %8s %12s  %s\n", "case", "us/launch", "vs raw us", "ratio",
              "vs idle us", "target");
  const struct {
    const char* name;
    const char* target;
    double limit_us;
  } cases[] = {{"raw", "", 0},
               {"bridge idle", "within noise of raw", 0.1},
               {"names only", "<= +0.5 us", 0.5},
               {"deferred", "<= +1.0 us", 1.0},
               {"deferred, records on", "(records on before the loop: a job's steady state)", -1},
               {"names only, made as run", "(a bridge made inside cuInit: no capture query)", -1},
               {"deferred, made as run", "(the same)", -1},
               {"resolved", "(blocks per launch)", -1},
               {"windows 20/80", "(deferred inside 20 ms of every 100, names only between)", -1},
               {"after", "within noise of raw", 0.1},
               {"CUPTI floor", "(no bridge: CUPTI's callbacks and records alone)", -1},
               {"CUPTI callbacks", "(no bridge: CUPTI's launch callbacks alone, no records)", -1},
               {"CUPTI floor, read", "(the floor, each buffer's records read)", -1},
               {"CUPTI floor, read and flushed", "(and flushed every 10 ms)", -1}};
  for (const auto& c : cases) {
    if (us[c.name].empty()) continue;
    const double m = median(us[c.name]);
    // Paired with the same round's idle case, for the cases measured while the bridge lived.
    std::string paired = "";
    // Only the main bridge's cases have an idle loop of their own bridge in the same round.
    const std::string name{c.name};
    const bool main_bridge_case =
        name == "bridge idle" || name == "names only" || name == "deferred" || name == "resolved";
    if (main_bridge_case && us["bridge idle"].size() == us[c.name].size()) {
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
    std::printf("%-29s %10.3f %+10.3f %8.2f %12s  %s%s\n", c.name, m, m - base, m / base,
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
  share("deferred, records on", "CUPTI floor", "the bridge's own share in a job's steady state");
  share("deferred, records on", "CUPTI floor, read and flushed",
        "the bridge's own share over a tool that reads its records while the job runs");
  share("deferred, made as run", "CUPTI floor",
        "the bridge's own share, made as launchwatch run makes it");
  share("names only, made as run", "CUPTI callbacks",
        "the bridge's own share of a names-only launch, made as launchwatch run makes it");
  share("CUPTI floor, read", "CUPTI floor", "reading the records");
  share("CUPTI floor, read and flushed", "CUPTI floor, read", "flushing every 10 ms");
  if (!enable_ms.empty()) {
    std::printf(
        "turning CUPTI's kernel records on (cuptiActivityEnable), once a job: %.2f ms "
        "median, %.3f us a launch of one round of %d\n",
        median(enable_ms), median(enable_ms) * 1000.0 / launches, launches);
  }
  share("names only", "CUPTI callbacks", "the bridge's own share of a names-only launch");
  std::printf("\ndeferred measurements: %ld resolved, %ld missing\n", delivered, missing);
  std::printf(
      "kernel records read by the two reading floors: %ld of %ld launched\n",
      floor_records_read.load(),
      static_cast<long>(launches) * static_cast<long>(us["CUPTI floor, read"].size() +
                                                      us["CUPTI floor, read and flushed"].size()));
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
