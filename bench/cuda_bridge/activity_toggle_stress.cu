// Whether CUPTI's kernel records can be turned on and off while a process launches (issue 24's
// `--timing windows:ON_MS/OFF_MS` depends on it): CYCLES enable/disable cycles of
// CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL while THREADS threads launch empty kernels, each on its
// own stream, with a launch callback subscribed as the bridge has one. Prints the cycles done, the
// launches made, the kernel records delivered (each checked: a correlation id the callbacks saw,
// an end not before its start), the cost of an enable and a disable, and the launch rate inside
// and outside the windows. Exit status 0 when every cycle returned success and every record
// checked out; a crash or a hang is the other answer (run it under `timeout`).
//
// Built as launchwatch_activity_toggle_stress (bench/cuda_bridge/CMakeLists.txt).
// Usage: launchwatch_activity_toggle_stress [CYCLES=10000] [THREADS=8] [ON_US=200] [OFF_US=200]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

namespace {

using clock_type = std::chrono::steady_clock;

__global__ void empty() {}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(2);
  }
}

std::atomic<std::uint64_t> failures{0};

void check(CUptiResult status, const char* what) {
  if (status != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(status, &text);
    std::fprintf(stderr, "%s: %s\n", what, text);
    failures.fetch_add(1);
  }
}

std::mutex seen_mutex;
std::unordered_set<std::uint32_t> seen;  // correlation ids of launches the callbacks saw
std::atomic<std::uint64_t> records{0};
std::atomic<std::uint64_t> bad_records{0};
std::atomic<std::uint64_t> launches{0};
std::atomic<bool> in_window{false};
std::atomic<std::uint64_t> launches_in_windows{0};

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId,
                          const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (call->callbackSite != CUPTI_API_ENTER) return;
  std::lock_guard lock{seen_mutex};
  seen.insert(call->correlationId);
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 4 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    records.fetch_add(1);
    bool known = false;
    {
      std::lock_guard lock{seen_mutex};
      known = seen.count(kernel->correlationId) != 0;
    }
    if (!known || kernel->end < kernel->start || kernel->start == 0) bad_records.fetch_add(1);
  }
  std::free(buffer);
}

int argument(int argc, char** argv, int index, int fallback) {
  return argc > index ? std::atoi(argv[index]) : fallback;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int cycles = argument(argc, argv, 1, 10000);
  const int threads = argument(argc, argv, 2, 8);
  const auto on = std::chrono::microseconds{argument(argc, argv, 3, 200)};
  const auto off = std::chrono::microseconds{argument(argc, argv, 4, 200)};

  check(cudaFree(nullptr), "init");
  CUpti_SubscriberHandle subscriber{};
  check(cuptiSubscribe(&subscriber, on_callback, nullptr), "cuptiSubscribe");
  check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
        "enable launch callback");
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "register");

  std::atomic<bool> stop{false};
  std::vector<std::thread> launchers;
  for (int t = 0; t < threads; ++t) {
    launchers.emplace_back([&] {
      cudaStream_t stream = nullptr;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
      std::uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const bool window = in_window.load(std::memory_order_relaxed);
        empty<<<1, 32, 0, stream>>>();
        ++n;
        if (window) launches_in_windows.fetch_add(1, std::memory_order_relaxed);
        if (n % 256 == 0) check(cudaStreamSynchronize(stream), "stream sync");
      }
      check(cudaStreamSynchronize(stream), "stream sync");
      launches.fetch_add(n);
      check(cudaStreamDestroy(stream), "stream destroy");
    });
  }

  std::vector<double> enable_us;
  std::vector<double> disable_us;
  const auto started = clock_type::now();
  for (int c = 0; c < cycles; ++c) {
    auto t0 = clock_type::now();
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable");
    auto t1 = clock_type::now();
    in_window.store(true, std::memory_order_relaxed);
    std::this_thread::sleep_for(on);
    in_window.store(false, std::memory_order_relaxed);
    auto t2 = clock_type::now();
    check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "disable");
    auto t3 = clock_type::now();
    enable_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    disable_us.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count());
    std::this_thread::sleep_for(off);
    if (c % 500 == 499) check(cuptiActivityFlushAll(0), "flush");
  }
  const double seconds = std::chrono::duration<double>(clock_type::now() - started).count();
  stop = true;
  for (auto& launcher : launchers) launcher.join();
  check(cudaDeviceSynchronize(), "sync");
  check(cuptiActivityFlushAll(1), "final flush");
  check(cuptiUnsubscribe(subscriber), "unsubscribe");

  std::printf("cycles %d threads %d on %lld us off %lld us: %.1f s\n", cycles, threads,
              static_cast<long long>(on.count()), static_cast<long long>(off.count()), seconds);
  std::printf("launches %llu (%llu begun inside a window), kernel records %llu, bad records %llu, "
              "CUPTI failures %llu\n",
              (unsigned long long)launches.load(), (unsigned long long)launches_in_windows.load(),
              (unsigned long long)records.load(), (unsigned long long)bad_records.load(),
              (unsigned long long)failures.load());
  std::printf("enable median %.1f us (max %.1f), disable median %.1f us (max %.1f)\n",
              median(enable_us), *std::max_element(enable_us.begin(), enable_us.end()),
              median(disable_us), *std::max_element(disable_us.begin(), disable_us.end()));
  return failures.load() == 0 && bad_records.load() == 0 && records.load() > 0 ? 0 : 1;
}
