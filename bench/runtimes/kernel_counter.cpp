// The independent reference of bench/runtimes: the CUDA kernels a process runs inside its profiler
// API ranges (cudaProfilerStart/cuProfilerStart to the matching Stop), counted and timed from
// CUPTI's concurrent-kernel activity records, with nothing of launchwatch in it. CUDA loads it as
// an injection into the program, in a process of its own:
//
//   CUDA_INJECTION64_PATH=liblaunchwatch_kernel_counter.so KERNEL_COUNTER_OUT=ref.json PROGRAM...
//
// At exit it writes KERNEL_COUNTER_OUT: {"kernels": N, "kernel_ns": T, "all_kernels": M,
// "windows": W, "by_name": {"name": [count, ns], ...}}, where N and T are the kernels whose launch
// (a graph replay's kernels: the cuGraphLaunch) came inside a range, and M every kernel record.
// A launch is inside a range when CUPTI's correlation id of its call lies between the Start
// call's (at its exit) and the Stop call's (at its entry): CUPTI numbers the process's CUDA calls
// in order. With KERNEL_COUNTER_WHOLE=1 the whole process counts as one range (programs that mark
// none, as bench/torch/modules_table.py's).
#include <cupti.h>

#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t buffer_bytes = std::size_t{8} << 20;

struct counts {
  std::mutex mutex;
  /// [open, close) correlation ids of the ranges so far; `open_at` while one is open.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> windows;
  bool open = false;
  std::uint32_t open_at = 0;
  /// Kernel records kept until exit: the ranges they belong to may close after they arrive.
  struct kernel {
    std::uint32_t correlation;
    std::uint64_t ns;
    std::string name;
  };
  std::vector<kernel> kernels;
};

counts& state() {
  static auto* const kept = new counts;  // never destroyed: CUPTI may flush during exit
  return *kept;
}

std::string demangled(const char* name) {
  if (name == nullptr) return "(unnamed kernel)";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> plain{
      abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free};
  return status == 0 && plain ? std::string{plain.get()} : std::string{name};
}

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = *buffer != nullptr ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<counts::kernel> got;
  CUpti_Activity* record = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    const std::uint64_t ns = k->end > k->start ? k->end - k->start : 0;
    got.push_back({k->correlationId, ns, demangled(k->name)});
  }
  std::free(buffer);
  auto& s = state();
  std::lock_guard lock{s.mutex};
  s.kernels.insert(s.kernels.end(), std::make_move_iterator(got.begin()),
                   std::make_move_iterator(got.end()));
}

bool is_start(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
  return id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
}

void CUPTIAPI on_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  const auto& call = *static_cast<const CUpti_CallbackData*>(data);
  auto& s = state();
  std::lock_guard lock{s.mutex};
  if (is_start(domain, id)) {
    // The runtime's Start wraps the driver's: the range opens after the last of them returned.
    if (call.callbackSite != CUPTI_API_EXIT) return;
    s.open_at = s.open ? std::max(s.open_at, call.correlationId) : call.correlationId;
    s.open = true;
  } else if (call.callbackSite == CUPTI_API_ENTER && s.open) {
    // ... and closes as the first Stop call begins.
    s.windows.emplace_back(s.open_at, call.correlationId);
    s.open = false;
  }
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

void write_counts() {
  (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char* path = std::getenv("KERNEL_COUNTER_OUT");
  if (path == nullptr) return;
  auto& s = state();
  std::lock_guard lock{s.mutex};
  if (s.open) s.windows.emplace_back(s.open_at, UINT32_MAX);  // a range the program never closed
  // KERNEL_COUNTER_WHOLE=1: the whole process is the range (a program that marks none).
  if (const char* whole = std::getenv("KERNEL_COUNTER_WHOLE"); whole != nullptr && whole[0] == '1') {
    s.windows.assign(1, {0, UINT32_MAX});
  }
  std::uint64_t inside = 0;
  std::uint64_t inside_ns = 0;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> by_name;
  for (const auto& k : s.kernels) {
    const bool in = std::any_of(s.windows.begin(), s.windows.end(), [&](const auto& w) {
      return k.correlation > w.first && k.correlation < w.second;
    });
    if (!in) continue;
    ++inside;
    inside_ns += k.ns;
    auto& row = by_name[k.name];
    ++row.first;
    row.second += k.ns;
  }
  std::FILE* out = std::fopen(path, "w");
  if (out == nullptr) return;
  std::fprintf(out, "{\"kernels\": %llu, \"kernel_ns\": %llu, \"all_kernels\": %zu, "
               "\"windows\": %zu, \"by_name\": {",
               static_cast<unsigned long long>(inside), static_cast<unsigned long long>(inside_ns),
               s.kernels.size(), s.windows.size());
  bool first = true;
  for (const auto& [name, row] : by_name) {
    std::fprintf(out, "%s%s: [%llu, %llu]", first ? "" : ", ", quoted(name).c_str(),
                 static_cast<unsigned long long>(row.first),
                 static_cast<unsigned long long>(row.second));
    first = false;
  }
  std::fprintf(out, "}}\n");
  std::fclose(out);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  CUpti_SubscriberHandle subscriber = nullptr;
  if (cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(&on_call), nullptr) !=
      CUPTI_SUCCESS) {
    std::fprintf(stderr, "kernel_counter: CUPTI is held by another subscriber\n");
    return 0;
  }
  (void)cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                            CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
  (void)cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                            CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
  (void)cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                            CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
  (void)cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                            CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
  if (cuptiActivityRegisterCallbacks(&requested, &completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "kernel_counter: CUPTI refused kernel records\n");
    return 0;
  }
  std::atexit(&write_counts);
  return 1;
}
