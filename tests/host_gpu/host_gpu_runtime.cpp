// The host GPU runtime's calls, and backend/gpu's templates instantiated over it.
#include "host_gpu_runtime.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "backend/gpu/gpu_client.hpp"
#include "backend/gpu/gpu_device_impl.hpp"
#include "backend/gpu/gpu_stream_impl.hpp"

namespace launchwatch::testing::host_gpu {

struct stream_state {
  /// A clock probe answering on its own thread: the stream is busy until it ends.
  std::atomic<int> busy{0};
  /// The graph a capture opened here fills, if one is open.
  graph_state* capturing = nullptr;
};

struct event_state {};

/// One captured launch: its entry, grid and the kernel's bytes.
struct captured_launch {
  const void* entry;
  detail::launch_geometry geometry;
  std::vector<std::byte> kernel;
};

struct graph_state {
  std::vector<captured_launch> launches;
};

namespace {

using R = host_gpu_runtime;

std::atomic<int> next_failure{R::success};
/// A kernel's fault, as a GPU's context keeps it: every later call that synchronises or launches
/// returns it (CUDA's sticky errors).
std::atomic<int> sticky_fault{R::success};

R::error fault() noexcept { return static_cast<R::error>(sticky_fault.load(std::memory_order_acquire)); }
std::atomic<std::uint64_t> run{0};
thread_local int current_device = 0;
thread_local const detail::launch_descriptor* latest_described = nullptr;

std::uint64_t steady_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
}

/// Folds `value` into `word` by maximum, as the GPU entry's fold does.
void fold_max(unsigned long long& word, unsigned long long value) noexcept {
  std::atomic_ref<unsigned long long> at{word};
  unsigned long long seen = at.load(std::memory_order_relaxed);
  while (seen < value && !at.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

constexpr std::size_t alignment = 256;

}  // namespace

const char* host_gpu_runtime::error_name(error status) noexcept {
  switch (status) {
    case success: return "hostSuccess";
    case not_ready: return "hostErrorNotReady";
    case out_of_memory: return "hostErrorMemoryAllocation";
    case capture_wrong_thread: return "hostErrorStreamCaptureWrongThread";
    case capture_invalidated: return "hostErrorStreamCaptureInvalidated";
    case launch_failure: return "hostErrorLaunchFailure";
    case invalid_value: return "hostErrorInvalidValue";
  }
  return "hostErrorUnknown";
}

const char* host_gpu_runtime::error_string(error status) noexcept {
  switch (status) {
    case success: return "no error";
    case not_ready: return "not ready";
    case out_of_memory: return "out of memory";
    case capture_wrong_thread: return "capture from another thread";
    case capture_invalidated: return "capture invalidated";
    case launch_failure: return "unspecified launch failure";
    case invalid_value: return "invalid argument";
  }
  return "unknown error";
}

std::string host_gpu_runtime::describe_failure(error status, std::string_view call,
                                               std::string_view kernel, int device) {
  return fmt::format("{} failed on host GPU device {}{}{}: {} ({})", call, device,
                     kernel.empty() ? "" : " for kernel ", kernel, error_name(status),
                     error_string(status));
}

void host_gpu_runtime::throw_failure(error status, std::string_view call, std::string_view kernel,
                                     int device) {
  throw device_error{describe_failure(status, call, kernel, device)};
}

std::string host_gpu_runtime::describe_out_of_memory(std::size_t bytes, std::size_t free_bytes,
                                                     std::size_t total_bytes, int device) {
  return detail::gpu::describe_out_of_memory(wording.api, error_name(out_of_memory), bytes,
                                             free_bytes, total_bytes, device);
}

R::error host_gpu_runtime::get_device(int* device) noexcept {
  *device = current_device;
  return success;
}

R::error host_gpu_runtime::set_device(int device) noexcept {
  if (device != 0) return invalid_value;
  current_device = device;
  return success;
}

R::error host_gpu_runtime::get_device_count(int* count) noexcept {
  *count = 1;
  return success;
}

R::error host_gpu_runtime::get_properties(detail::gpu::device_properties& out, int device) {
  if (device != 0) return invalid_value;
  out = {"launchwatch host GPU (emulated)",
         1024,
         {1024, 1024, 64},
         {2147483647, 65535, 65535},
         48 * 1024,
         227 * 1024,
         9,
         0};
  return success;
}

R::error host_gpu_runtime::mem_get_info(std::size_t* free_bytes,
                                        std::size_t* total_bytes) noexcept {
  *free_bytes = 0;
  *total_bytes = 0;
  return success;
}

R::error host_gpu_runtime::stream_create(stream_handle* s) noexcept {
  *s = new (std::nothrow) stream_state{};
  return *s == nullptr ? out_of_memory : success;
}

R::error host_gpu_runtime::stream_destroy(stream_handle s) noexcept {
  (void)stream_synchronize(s);
  delete s;
  return success;
}

R::error host_gpu_runtime::stream_synchronize(stream_handle s) noexcept {
  while (s->busy.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  return fault();
}

R::error host_gpu_runtime::stream_query(stream_handle s) noexcept {
  if (const error sticky = fault(); sticky != success) return sticky;
  return s->busy.load(std::memory_order_acquire) != 0 ? not_ready : success;
}

R::error host_gpu_runtime::event_query(event_handle) noexcept { return fault(); }

R::error host_gpu_runtime::event_synchronize(event_handle) noexcept { return fault(); }

R::error host_gpu_runtime::event_create(event_handle* e) noexcept {
  *e = new (std::nothrow) event_state{};
  return *e == nullptr ? out_of_memory : success;
}

R::error host_gpu_runtime::event_destroy(event_handle e) noexcept {
  delete e;
  return success;
}

R::error host_gpu_runtime::device_malloc(void** p, std::size_t bytes) noexcept {
  const std::size_t rounded = std::max<std::size_t>((bytes + alignment - 1) / alignment, 1) *
                              alignment;
  *p = std::aligned_alloc(alignment, rounded);
  return *p == nullptr ? out_of_memory : success;
}

R::error host_gpu_runtime::device_free(void* p) noexcept {
  std::free(p);
  return success;
}

R::error host_gpu_runtime::copy_to_device_async(void* to, const void* from, std::size_t bytes,
                                                stream_handle) noexcept {
  if (const error sticky = fault(); sticky != success) return sticky;
  if (bytes != 0) std::memcpy(to, from, bytes);
  return success;
}

R::error host_gpu_runtime::copy_to_host_async(void* to, const void* from, std::size_t bytes,
                                              stream_handle) noexcept {
  if (const error sticky = fault(); sticky != success) return sticky;
  if (bytes != 0) std::memcpy(to, from, bytes);
  return success;
}

R::error host_gpu_runtime::memset_async(void* p, int value, std::size_t bytes,
                                        stream_handle) noexcept {
  if (bytes != 0) std::memset(p, value, bytes);
  return success;
}

R::error host_gpu_runtime::pool_create(pool_handle* pool, int device) noexcept {
  if (device != 0) return invalid_value;
  *pool = new (std::nothrow) int{0};
  return *pool == nullptr ? out_of_memory : success;
}

R::error host_gpu_runtime::pool_destroy(pool_handle pool) noexcept {
  delete pool;
  return success;
}

const void* host_gpu_runtime::entry_of(const detail::launch_descriptor& launch) noexcept {
  latest_described = &launch;
  return reinterpret_cast<const void*>(launch.cpu_entry);
}

R::error host_gpu_runtime::function_get_attributes(function_attributes* out,
                                                   const void* entry) noexcept {
  if (entry == nullptr) return invalid_value;
  *out = function_attributes{};
  return success;
}

R::error host_gpu_runtime::launch_kernel(const void* entry, const detail::launch_geometry& geometry,
                                         void** arguments, stream_handle s) noexcept {
  if (const int failing = next_failure.exchange(success); failing != success) {
    return static_cast<error>(failing);
  }
  if (const error sticky = fault(); sticky != success) return sticky;
  if (s->capturing != nullptr) {
    const detail::launch_descriptor* launch = latest_described;
    if (launch == nullptr || launch->kernel != arguments[0]) return invalid_value;
    const auto* bytes = static_cast<const std::byte*>(launch->kernel);
    try {
      s->capturing->launches.push_back(
          {entry, geometry, std::vector<std::byte>(bytes, bytes + launch->kernel_size)});
    } catch (...) {
      return out_of_memory;
    }
    return success;
  }
  const auto* timing = static_cast<const detail::timing_target*>(arguments[1]);
  detail::timing_lane* lane = timing->slot != nullptr ? &timing->slot->lanes[0] : nullptr;
  if (lane != nullptr) fold_max(lane->start_inverted, ~steady_ns());
  const auto run_cubes = reinterpret_cast<detail::cpu_entry_function>(entry);
  const cube_count& count = geometry.count;
  try {
    run_cubes(arguments[0], geometry, 0,
              std::uint64_t{count.x} * std::uint64_t{count.y} * std::uint64_t{count.z});
  } catch (...) {
    // A kernel that failed on the host (lw_fail): a fault the launch itself does not see, and
    // the next synchronising call does, as a GPU kernel's.
    sticky_fault.store(launch_failure, std::memory_order_release);
  }
  if (lane != nullptr) fold_max(lane->end, steady_ns());
  run.fetch_add(1, std::memory_order_relaxed);
  return success;
}

R::error host_gpu_runtime::launch_clock_probe(stream_handle s,
                                              detail::gpu::clock_probe_mailbox* mailbox,
                                              std::uint64_t budget_ns) noexcept {
  s->busy.fetch_add(1, std::memory_order_acq_rel);
  try {
    std::thread{[s, mailbox, budget_ns] {
      // clock_probe.hpp's answer_clock_probes, with the steady clock as the device's timer.
      const auto load = [](std::uint64_t& word) {
        return std::atomic_ref<std::uint64_t>{word}.load(std::memory_order_acquire);
      };
      const auto store = [](std::uint64_t& word, std::uint64_t value) {
        std::atomic_ref<std::uint64_t>{word}.store(value, std::memory_order_release);
      };
      const std::uint64_t began = steady_ns();
      store(mailbox->started, 1);
      std::uint64_t answered = 0;
      for (;;) {
        const std::uint64_t request = load(mailbox->request);
        if (request == detail::gpu::stop_request) break;
        if (request != answered) {
          store(mailbox->device_ns, steady_ns());
          store(mailbox->answered, request);
          answered = request;
        } else if (steady_ns() - began > budget_ns) {
          break;
        } else {
          std::this_thread::yield();
        }
      }
      s->busy.fetch_sub(1, std::memory_order_acq_rel);
    }}.detach();
  } catch (...) {
    s->busy.fetch_sub(1, std::memory_order_acq_rel);
    return out_of_memory;
  }
  return success;
}

R::error host_gpu_runtime::stream_begin_capture(stream_handle s) noexcept {
  if (s->capturing != nullptr) return capture_invalidated;
  s->capturing = new (std::nothrow) graph_state{};
  return s->capturing == nullptr ? out_of_memory : success;
}

R::error host_gpu_runtime::stream_end_capture(stream_handle s, graph_handle* graph) noexcept {
  if (s->capturing == nullptr) return capture_invalidated;
  *graph = std::exchange(s->capturing, nullptr);
  return success;
}

R::error host_gpu_runtime::graph_instantiate(graph_exec_handle* exec, graph_handle graph) noexcept {
  try {
    *exec = new graph_state{*graph};
  } catch (...) {
    return out_of_memory;
  }
  return success;
}

R::error host_gpu_runtime::graph_launch(graph_exec_handle exec, stream_handle s) noexcept {
  for (captured_launch& launch : exec->launches) {
    detail::timing_target untimed{};
    void* arguments[] = {launch.kernel.data(), &untimed};
    if (const error status = launch_kernel(launch.entry, launch.geometry, arguments, s);
        status != success) {
      return status;
    }
  }
  return success;
}

R::error host_gpu_runtime::graph_destroy(graph_handle graph) noexcept {
  delete graph;
  return success;
}

R::error host_gpu_runtime::graph_exec_destroy(graph_exec_handle exec) noexcept {
  delete exec;
  return success;
}

client open_client() { return detail::gpu::open_client<host_gpu_runtime>(0); }

void fail_next_launch(host_gpu_runtime::error status) noexcept { next_failure.store(status); }

std::uint64_t kernels_run() noexcept { return run.load(std::memory_order_relaxed); }

}  // namespace launchwatch::testing::host_gpu

template class launchwatch::detail::gpu::gpu_device<
    launchwatch::testing::host_gpu::host_gpu_runtime>;
template class launchwatch::detail::gpu::gpu_stream<
    launchwatch::testing::host_gpu::host_gpu_runtime>;
