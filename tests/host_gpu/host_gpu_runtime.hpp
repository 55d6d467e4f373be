// A GPU runtime emulated on the host, for the templates of src/backend/gpu: the CUDA and HIP
// backends' devices, streams, graphs, clock and deferred timing, run and measured on any machine.
//
// Why: what launchwatch itself costs on a GPU launch (the launch path, the stream's side, the
// timing collector) is a few hundred nanoseconds beside the driver's few microseconds, whose
// spread (±15% between rounds on the H200) hides it. Over this runtime, the launch path is the
// real one (backend/gpu's code, instantiated here as it is for CUDA) and the API's launch is a call
// that runs the kernel's CPU entry, so launchwatch's part is measured alone, side by side with a
// raw call of the same launch (bench/runtime/gpu_launch_path_bench.cpp), and the shared GPU code
// is tested under the sanitizers, which never see a GPU.
//
// The emulation: each stream runs what is queued on it in order, on a thread of its own, after the
// call that queued it has returned, as a GPU does: a kernel through its CPU entry
// (launch_descriptor::cpu_entry, the kernel's bytes copied at the call), a timed one stamping the
// first lane of its slot with the steady clock around the run, as the GPU entry stamps the device
// timer; an event's record, which the event is done with once the stream has reached it; a wait for
// another stream's event; a free. Copies and fills run on the calling thread once the stream has
// reached them. The clock probe answers on a thread of its own (its stream is busy until it ends).
// Memory is host memory. A captured launch is copied into its graph, and each replay queues the
// graph's launches, untimed. Errors: none, unless a kernel fails (lw_fail: a sticky fault that the
// launch does not see and every later synchronising call returns, as a GPU kernel's) or a test asks
// (fail_next_launch: the launch call itself fails). run_kernels_inside_the_launch(true) makes every
// operation run inside its call instead, for the benchmark: the launching thread's cost alone,
// with no stream thread competing for the machine.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <launchwatch/runtime/client.hpp>

#include "backend/gpu/clock_probe.hpp"
#include "backend/gpu/runtime_api.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::testing::host_gpu {

struct stream_state;
struct event_state;
struct graph_state;

/// The runtime class (backend/gpu/runtime_api.hpp says what one provides).
/// Thread safety: every function may be called from several threads at once.
struct host_gpu_runtime {
  enum error : int {
    success = 0,
    not_ready = 1,
    out_of_memory = 2,
    capture_wrong_thread = 3,
    capture_invalidated = 4,
    launch_failure = 5,  // sticky, as a kernel fault is
    invalid_value = 6,
  };
  using stream_handle = stream_state*;
  using event_handle = event_state*;
  using graph_handle = graph_state*;
  using graph_exec_handle = graph_state*;
  using pool_handle = int*;
  struct function_attributes {
    int maxThreadsPerBlock = 1024;
    int numRegs = 32;
    std::size_t sharedSizeBytes = 0;
  };
  using function_handle = const void*;
  /// Nothing to relax: no capture here is global.
  struct relaxed_capture_mode {
    relaxed_capture_mode() noexcept {}
    ~relaxed_capture_mode() {}
    relaxed_capture_mode(const relaxed_capture_mode&) = delete;
    relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;
  };

  static constexpr detail::gpu::api_wording wording{
      .api = "host GPU",
      .prefix = "host",
      .backend = "host_gpu",
      .no_entry = "the launch has no CPU entry",
      .architecture_hint = "",
      .sanitizer = "AddressSanitizer",
      .graph_replay = "(host GPU graph replay)",
      .no_device = "the host GPU has one device, index 0",
      .visible_devices = "nothing",
  };
  static constexpr std::string_view timing_slots_variable = "LAUNCHWATCH_HOST_GPU_TIMING_SLOTS";

  // Errors.
  static void clear_error() noexcept {}
  static bool is_sticky(error status) noexcept { return status == launch_failure; }
  static bool lacks_code_for_device(error) noexcept { return false; }
  static const char* error_name(error status) noexcept;
  static const char* error_string(error status) noexcept;
  static std::string describe_failure(error status, std::string_view call, std::string_view kernel,
                                      int device);
  [[noreturn]] static void throw_failure(error status, std::string_view call,
                                         std::string_view kernel, int device);
  static std::string describe_out_of_memory(std::size_t bytes, std::size_t free_bytes,
                                            std::size_t total_bytes, int device);

  // Devices: one.
  static error get_device(int* device) noexcept;
  static error set_device(int device) noexcept;
  static error get_device_count(int* count) noexcept;
  static error get_properties(detail::gpu::device_properties& out, int device);
  static std::chrono::nanoseconds grid_overhead(const detail::gpu::device_properties&) {
    return std::chrono::nanoseconds{0};
  }
  static error mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept;

  // Streams and events.
  static error stream_create(stream_handle* s) noexcept;
  static error stream_destroy(stream_handle s) noexcept;
  static error stream_synchronize(stream_handle s) noexcept;
  static error stream_query(stream_handle s) noexcept;
  static error stream_wait_event(stream_handle s, event_handle e) noexcept;
  static error event_create(event_handle* e) noexcept;
  static error event_destroy(event_handle e) noexcept;
  static error event_record(event_handle e, stream_handle s) noexcept;
  static error event_query(event_handle e) noexcept;
  static error event_synchronize(event_handle e) noexcept;

  // Memory: host memory, aligned as a device allocation is.
  static error device_malloc(void** p, std::size_t bytes) noexcept;
  static error device_free(void* p) noexcept;
  static error host_alloc(void** p, std::size_t bytes) noexcept { return device_malloc(p, bytes); }
  static error host_alloc_mapped(void** p, std::size_t bytes) noexcept {
    return device_malloc(p, bytes);
  }
  static error host_device_pointer(void** on_device, void* host) noexcept {
    *on_device = host;
    return success;
  }
  static error free_host(void* p) noexcept { return device_free(p); }
  static error copy_to_device_async(void* to, const void* from, std::size_t bytes,
                                    stream_handle s) noexcept;
  static error copy_to_host_async(void* to, const void* from, std::size_t bytes,
                                  stream_handle s) noexcept;
  static error memset_async(void* p, int value, std::size_t bytes, stream_handle s) noexcept;
  static error pool_create(pool_handle* pool, int device) noexcept;
  static error pool_destroy(pool_handle pool) noexcept;
  static error malloc_from_pool_async(void** p, std::size_t bytes, pool_handle,
                                      stream_handle) noexcept {
    return device_malloc(p, bytes);
  }
  /// Frees `p` once `s` has reached the call (after the kernels queued before it).
  static error free_async(void* p, stream_handle s) noexcept;

  // Kernels: the entry is the launch's CPU entry.
  /// The launch's CPU entry. Also keeps `launch` as the calling thread's latest, so a launch the
  /// stream makes right after (gpu_stream::launch asks for the entry as it launches) can be copied
  /// into a graph when captured: the API's call carries no kernel size.
  static const void* entry_of(const detail::launch_descriptor& launch) noexcept;
  static error function_get_attributes(function_attributes* out, const void* entry) noexcept;
  /// The entry's function here is the entry itself.
  static error find_function(function_handle* out, const void* entry) noexcept {
    *out = entry;
    return success;
  }
  /// Runs the kernel (`arguments[0]`) through its CPU entry over the whole grid, stamping the
  /// slot of `arguments[1]` (a timing_target) when it has one; counted into the graph instead
  /// while `s` captures. Refuses a function that is not `entry`'s own (as a driver refuses one of
  /// another context), so the emulated runs check that the backend hands each launch its entry's
  /// function.
  static error launch_kernel(function_handle function, const void* entry,
                             const detail::launch_geometry& geometry, void** arguments,
                             stream_handle s) noexcept;
  /// Answers the clock probe's requests with the steady clock, on a thread of its own, until told
  /// to stop or out of budget; `s` is busy meanwhile.
  static error launch_clock_probe(stream_handle s, detail::gpu::clock_probe_mailbox* mailbox,
                                  std::uint64_t budget_ns) noexcept;
  static error load_clock_probe() noexcept { return success; }

  // Graphs.
  static error stream_begin_capture(stream_handle s) noexcept;
  static error stream_end_capture(stream_handle s, graph_handle* graph) noexcept;
  static error graph_instantiate(graph_exec_handle* exec, graph_handle graph) noexcept;
  static error graph_launch(graph_exec_handle exec, stream_handle s) noexcept;
  static error graph_destroy(graph_handle graph) noexcept;
  static error graph_exec_destroy(graph_exec_handle exec) noexcept;
};

/// A client of the host GPU's one device (as client::cuda(0) is of CUDA's first): launches go
/// through backend/gpu's device and stream, and the launch path, exactly as on CUDA.
client open_client();

/// Makes the next kernel launch call fail with `status`, as cudaLaunchKernel fails (launch_failure
/// is a sticky error: the device is then unusable). For tests of the stream's failures.
void fail_next_launch(host_gpu_runtime::error status) noexcept;

/// Whether every operation runs inside the call that makes it (true) or on its stream's thread
/// (false, the default). Set before the first client is opened.
void run_kernels_inside_the_launch(bool inside) noexcept;

/// Kernel launches the runtime has run (not counting captured ones), for tests.
std::uint64_t kernels_run() noexcept;

/// The longest any clock probe has answered so far, from its start to its end. Every exchange of
/// a probe lies inside that time, so an anchor taken from it is off by at most this: the bound a
/// test of mapped times may allow, however loaded the machine.
std::chrono::nanoseconds longest_clock_probe() noexcept;

}  // namespace launchwatch::testing::host_gpu
