// The host GPU runtime's calls, and backend/gpu's templates instantiated over it.
#include "host_gpu_runtime.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "backend/gpu/gpu_client.hpp"
#include "backend/gpu/gpu_device_impl.hpp"
#include "backend/gpu/gpu_stream_impl.hpp"

namespace launchwatch::testing::host_gpu {

/// A stream: the work queued on it, run in order by a thread of its own (started by its first
/// queued operation), as a GPU runs a stream's work after the host has moved on.
struct stream_state {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> queue;  // guarded by mutex
  std::uint64_t pending = 0;                // guarded by mutex: queued or running operations
  bool stopping = false;                    // guarded by mutex
  std::thread worker;
  /// Clock probes answering on threads of their own: the stream is busy until they end.
  std::atomic<int> probes{0};
  /// The graph a capture opened here fills, if one is open (the caller's lock guards it, as the
  /// API leaves a capturing stream to its thread).
  graph_state* capturing = nullptr;
};

/// An event: the records made of it, and how far its streams have passed them.
struct event_state {
  std::atomic<std::uint64_t> recorded{0};
  std::atomic<std::uint64_t> reached{0};
};

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

/// longest_clock_probe()'s value, folded by fold_max.
unsigned long long longest_probe_ns = 0;

std::atomic<bool> inside_the_launch{false};

/// Events by handle, shared with the operations queued on them: an event destroyed while a record
/// of it is queued lives until that record has run (as the API allows).
std::mutex events_mutex;
std::unordered_map<event_state*, std::shared_ptr<event_state>>& events() {
  static auto* all = new std::unordered_map<event_state*, std::shared_ptr<event_state>>();
  return *all;
}

std::shared_ptr<event_state> shared(event_state* e) {
  std::lock_guard lock{events_mutex};
  const auto found = events().find(e);
  return found == events().end() ? nullptr : found->second;
}

void run_queue(stream_state* s) {
  std::unique_lock lock{s->mutex};
  for (;;) {
    s->changed.wait(lock, [&] { return s->stopping || !s->queue.empty(); });
    if (s->queue.empty()) return;  // stopping, and nothing left
    std::function<void()> next = std::move(s->queue.front());
    s->queue.pop_front();
    lock.unlock();
    next();
    next = nullptr;
    lock.lock();
    --s->pending;
    s->changed.notify_all();
  }
}

/// Runs `work` on `s` after everything queued there before it: inline when kernels run inside the
/// launch, else on the stream's thread.
R::error submit(stream_state* s, std::function<void()> work) noexcept {
  if (inside_the_launch.load(std::memory_order_relaxed)) {
    work();
    return R::success;
  }
  try {
    std::lock_guard lock{s->mutex};
    if (!s->worker.joinable()) s->worker = std::thread{run_queue, s};
    s->queue.push_back(std::move(work));
    ++s->pending;
  } catch (...) {
    return R::out_of_memory;
  }
  s->changed.notify_all();
  return R::success;
}

/// Waits until everything queued on `s` has run.
void drain(stream_state* s) {
  std::unique_lock lock{s->mutex};
  s->changed.wait(lock, [&] { return s->pending == 0; });
}

/// Runs a kernel as its GPU entry would: stamps the first lane of the launch's slot (if timed)
/// around the CPU entry's run over the whole grid. A kernel that throws (lw_fail) is a fault the
/// next synchronising call returns, as a GPU kernel's.
void run_kernel(const void* entry, const detail::launch_geometry& geometry, const void* kernel,
                detail::timing_slot* slot) noexcept {
  detail::timing_lane* lane = slot != nullptr ? &slot->lanes[0] : nullptr;
  if (lane != nullptr) fold_max(lane->start_inverted, ~steady_ns());
  const auto run_cubes = reinterpret_cast<detail::cpu_entry_function>(const_cast<void*>(entry));
  const cube_count& count = geometry.count;
  try {
    run_cubes(kernel, geometry, 0,
              std::uint64_t{count.x} * std::uint64_t{count.y} * std::uint64_t{count.z});
  } catch (...) {
    sticky_fault.store(R::launch_failure, std::memory_order_release);
  }
  if (lane != nullptr) fold_max(lane->end, steady_ns());
  run.fetch_add(1, std::memory_order_relaxed);
}

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
  {
    std::lock_guard lock{s->mutex};
    s->stopping = true;
  }
  s->changed.notify_all();
  if (s->worker.joinable()) s->worker.join();
  delete s;
  return success;
}

R::error host_gpu_runtime::stream_synchronize(stream_handle s) noexcept {
  drain(s);
  while (s->probes.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  return fault();
}

R::error host_gpu_runtime::stream_query(stream_handle s) noexcept {
  if (const error sticky = fault(); sticky != success) return sticky;
  {
    std::lock_guard lock{s->mutex};
    if (s->pending != 0) return not_ready;
  }
  return s->probes.load(std::memory_order_acquire) != 0 ? not_ready : success;
}

R::error host_gpu_runtime::stream_wait_event(stream_handle s, event_handle e) noexcept {
  std::shared_ptr<event_state> held = shared(e);
  if (held == nullptr) return invalid_value;
  const std::uint64_t target = held->recorded.load(std::memory_order_acquire);
  return submit(s, [held = std::move(held), target] {
    while (held->reached.load(std::memory_order_acquire) < target) std::this_thread::yield();
  });
}

R::error host_gpu_runtime::event_create(event_handle* e) noexcept {
  try {
    auto made = std::make_shared<event_state>();
    std::lock_guard lock{events_mutex};
    events().emplace(made.get(), made);
    *e = made.get();
  } catch (...) {
    return out_of_memory;
  }
  return success;
}

R::error host_gpu_runtime::event_destroy(event_handle e) noexcept {
  std::lock_guard lock{events_mutex};
  events().erase(e);
  return success;
}

R::error host_gpu_runtime::event_record(event_handle e, stream_handle s) noexcept {
  if (s->capturing != nullptr) return success;  // a capture's own order: nothing to mark now
  std::shared_ptr<event_state> held = shared(e);
  if (held == nullptr) return invalid_value;
  const std::uint64_t generation = held->recorded.fetch_add(1, std::memory_order_acq_rel) + 1;
  return submit(s, [held = std::move(held), generation] {
    std::uint64_t seen = held->reached.load(std::memory_order_relaxed);
    while (seen < generation &&
           !held->reached.compare_exchange_weak(seen, generation, std::memory_order_release)) {
    }
  });
}

R::error host_gpu_runtime::event_query(event_handle e) noexcept {
  if (const error sticky = fault(); sticky != success) return sticky;
  return e->reached.load(std::memory_order_acquire) >= e->recorded.load(std::memory_order_acquire)
             ? success
             : not_ready;
}

R::error host_gpu_runtime::event_synchronize(event_handle e) noexcept {
  while (e->reached.load(std::memory_order_acquire) < e->recorded.load(std::memory_order_acquire)) {
    std::this_thread::yield();
  }
  return fault();
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

// Copies and fills run when the stream has reached them, on the calling thread (as a copy from
// pageable memory returns once it is done): every operation queued before them has run. Host and
// device memory are one here, so both directions are the same copy.
R::error host_gpu_runtime::copy_to_device_async(void* to, const void* from, std::size_t bytes,
                                                stream_handle s) noexcept {
  if (const error sticky = fault(); sticky != success) return sticky;
  drain(s);
  if (bytes != 0) std::memcpy(to, from, bytes);
  return success;
}

R::error host_gpu_runtime::copy_to_host_async(void* to, const void* from, std::size_t bytes,
                                              stream_handle s) noexcept {
  return copy_to_device_async(to, from, bytes, s);
}

R::error host_gpu_runtime::memset_async(void* p, int value, std::size_t bytes,
                                        stream_handle s) noexcept {
  drain(s);
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

R::error host_gpu_runtime::launch_kernel(function_handle function, const void* entry,
                                         const detail::launch_geometry& geometry, void** arguments,
                                         stream_handle s) noexcept {
  if (function != entry) return invalid_value;
  if (const int failing = next_failure.exchange(success); failing != success) {
    return static_cast<error>(failing);
  }
  if (const error sticky = fault(); sticky != success) return sticky;
  detail::timing_slot* const slot = static_cast<const detail::timing_target*>(arguments[1])->slot;
  if (inside_the_launch.load(std::memory_order_relaxed) && s->capturing == nullptr) {
    run_kernel(entry, geometry, arguments[0], slot);
    return success;
  }
  // Queued or captured: the kernel's bytes are copied now (the API copies its arguments at the
  // call), their size from the descriptor this thread's launch asked the entry of.
  const detail::launch_descriptor* launch = latest_described;
  if (launch == nullptr || launch->kernel != arguments[0]) return invalid_value;
  const auto* bytes = static_cast<const std::byte*>(launch->kernel);
  try {
    captured_launch copy{entry, geometry,
                         std::vector<std::byte>(bytes, bytes + launch->kernel_size)};
    if (s->capturing != nullptr) {
      s->capturing->launches.push_back(std::move(copy));
      return success;
    }
    return submit(s, [copy = std::move(copy), slot] {
      run_kernel(copy.entry, copy.geometry, copy.kernel.data(), slot);
    });
  } catch (...) {
    return out_of_memory;
  }
}

R::error host_gpu_runtime::launch_clock_probe(stream_handle s,
                                              detail::gpu::clock_probe_mailbox* mailbox,
                                              std::uint64_t budget_ns) noexcept {
  s->probes.fetch_add(1, std::memory_order_acq_rel);
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
      fold_max(longest_probe_ns, steady_ns() - began);
      s->probes.fetch_sub(1, std::memory_order_acq_rel);
    }}.detach();
  } catch (...) {
    s->probes.fetch_sub(1, std::memory_order_acq_rel);
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
  if (const error sticky = fault(); sticky != success) return sticky;
  for (const captured_launch& launch : exec->launches) {
    try {
      if (const error status = submit(s, [copy = launch] {
            run_kernel(copy.entry, copy.geometry, copy.kernel.data(), nullptr);
          });
          status != success) {
        return status;
      }
    } catch (...) {
      return out_of_memory;
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

void run_kernels_inside_the_launch(bool inside) noexcept { inside_the_launch.store(inside); }

R::error host_gpu_runtime::free_async(void* p, stream_handle s) noexcept {
  return submit(s, [p] { std::free(p); });
}

std::uint64_t kernels_run() noexcept { return run.load(std::memory_order_relaxed); }

std::chrono::nanoseconds longest_clock_probe() noexcept {
  return std::chrono::nanoseconds{
      std::atomic_ref<unsigned long long>{longest_probe_ns}.load(std::memory_order_relaxed)};
}

}  // namespace launchwatch::testing::host_gpu

template class launchwatch::detail::gpu::gpu_device<
    launchwatch::testing::host_gpu::host_gpu_runtime>;
template class launchwatch::detail::gpu::gpu_stream<
    launchwatch::testing::host_gpu::host_gpu_runtime>;
