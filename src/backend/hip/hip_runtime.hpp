// HIP's runtime API as the shared GPU backend calls it (backend/gpu/runtime_api.hpp says why and
// what a runtime class provides). One line a call: the only place the HIP backend differs from the
// CUDA backend, besides its errors (hip_check.hpp) and its kernels (device_clock.hip).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "backend/gpu/clock_probe.hpp"
#include "backend/gpu/device_guard.hpp"
#include "backend/gpu/grid_overhead.hpp"
#include "backend/gpu/runtime_api.hpp"
#include "hip_api.hpp"
#include "hip_check.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::hip {

namespace platform {
#if defined(__HIP_PLATFORM_NVIDIA__)
// HIP 5.2's NVIDIA headers give CUDA's types these names but not their values, nor
// hipThreadExchangeStreamCaptureMode: CUDA's serve, since the types are CUDA's.
inline constexpr auto pool_pinned = cudaMemAllocationTypePinned;
inline constexpr auto pool_on_device = cudaMemLocationTypeDevice;
inline constexpr auto pool_release_threshold = cudaMemPoolAttrReleaseThreshold;
inline constexpr auto pool_reuse_internal = cudaMemPoolReuseAllowInternalDependencies;
inline constexpr auto capture_relaxed = cudaStreamCaptureModeRelaxed;
inline hipError_t exchange_capture_mode(hipStreamCaptureMode* mode) noexcept {
  return hipCUDAErrorTohipError(cudaThreadExchangeStreamCaptureMode(mode));
}
#else
inline constexpr auto pool_pinned = hipMemAllocationTypePinned;
inline constexpr auto pool_on_device = hipMemLocationTypeDevice;
inline constexpr auto pool_release_threshold = hipMemPoolAttrReleaseThreshold;
inline constexpr auto pool_reuse_internal = hipMemPoolReuseAllowInternalDependencies;
inline constexpr auto capture_relaxed = hipStreamCaptureModeRelaxed;
inline hipError_t exchange_capture_mode(hipStreamCaptureMode* mode) noexcept {
  return hipThreadExchangeStreamCaptureMode(mode);
}
#endif
}  // namespace platform

/// Lets the calling thread make calls a capture window would otherwise forbid it (allocations,
/// synchronising another stream) while it lives: the backend's memory and timing work never goes
/// to a capturing stream (as cuda_common/capture_mode.hpp does for CUDA).
class [[nodiscard]] relaxed_capture_mode {
 public:
  relaxed_capture_mode() noexcept { (void)platform::exchange_capture_mode(&previous_); }
  ~relaxed_capture_mode() { (void)platform::exchange_capture_mode(&previous_); }
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;

 private:
  hipStreamCaptureMode previous_ = platform::capture_relaxed;
};

/// HIP's runtime, for the templates of backend/gpu. Calls return HIP's status unchanged.
struct hip_runtime {
  using error = hipError_t;
  using stream_handle = hipStream_t;
  using event_handle = hipEvent_t;
  using graph_handle = hipGraph_t;
  using graph_exec_handle = hipGraphExec_t;
  using pool_handle = hipMemPool_t;
  using function_attributes = hipFuncAttributes;
  using function_handle = hipFunction_t;
  using relaxed_capture_mode = hip::relaxed_capture_mode;

  static constexpr error success = hipSuccess;
  static constexpr error not_ready = hipErrorNotReady;
  static constexpr error out_of_memory = hipErrorOutOfMemory;
  static constexpr error capture_wrong_thread = hipErrorStreamCaptureWrongThread;
  static constexpr error capture_invalidated = hipErrorStreamCaptureInvalidated;

  static constexpr gpu::api_wording wording{
      .api = "HIP",
      .prefix = "hip",
      .backend = "hip",
      .no_entry =
          "the file that launched it was not compiled by a HIP compiler, so no HIP entry was "
          "instantiated for it. Compile that file as HIP (name it .hip, or "
          "set_source_files_properties(FILE PROPERTIES LANGUAGE HIP); on HIP's NVIDIA platform, "
          "LANGUAGE CUDA), or launch it through client::cpu()",
      .architecture_hint =
          "The file that launches it was compiled for other GPU architectures: set "
          "CMAKE_HIP_ARCHITECTURES to include this one (gfx90a for an MI200), or, on HIP's NVIDIA "
          "platform, CMAKE_CUDA_ARCHITECTURES (90 for an H100 or H200)",
      .sanitizer = "a memory checker (compute-sanitizer on NVIDIA GPUs, rocgdb on AMD GPUs)",
      .graph_replay = "(HIP graph replay)",
      .no_device =
          "This machine has no GPU HIP can use: an AMD GPU with its amdgpu driver (/dev/kfd), or, "
          "on HIP's NVIDIA platform, an NVIDIA GPU and its driver",
      .visible_devices = "HIP_VISIBLE_DEVICES",
  };
  static constexpr std::string_view timing_slots_variable = "LAUNCHWATCH_HIP_TIMING_SLOTS";
  static constexpr std::string_view grid_overhead_variable = "LAUNCHWATCH_HIP_GRID_OVERHEAD_NS";
#if defined(__HIP_PLATFORM_NVIDIA__)
  static constexpr bool on_nvidia = true;
#else
  static constexpr bool on_nvidia = false;
#endif

  // Errors (hip_check.hpp).
  static void clear_error() noexcept {
    (void)hipGetLastError();
  }
  static bool is_sticky(error status) noexcept {
    return hip::is_sticky(status);
  }
  static bool lacks_code_for_device(error status) noexcept {
    return status == hipErrorInvalidDeviceFunction || status == hipErrorNoBinaryForGpu ||
           status == hipErrorInvalidKernelFile;
  }
  static const char* error_name(error status) noexcept {
    return hipGetErrorName(status);
  }
  static const char* error_string(error status) noexcept {
    return hipGetErrorString(status);
  }
  static std::string describe_failure(error status, std::string_view call, std::string_view kernel,
                                      int device) {
    return hip::describe_failure(status, call, kernel, device);
  }
  [[noreturn]] static void throw_failure(error status, std::string_view call,
                                         std::string_view kernel, int device) {
    hip::throw_failure(status, call, kernel, device);
  }
  static std::string describe_out_of_memory(std::size_t bytes, std::size_t free_bytes,
                                            std::size_t total_bytes, int device) {
    return hip::describe_out_of_memory(bytes, free_bytes, total_bytes, device);
  }

  // Devices.
  static error get_device(int* device) noexcept {
    return hipGetDevice(device);
  }
  static error set_device(int device) noexcept {
    return hipSetDevice(device);
  }
  static error get_device_count(int* count) noexcept {
    return hipGetDeviceCount(count);
  }
  static error get_properties(gpu::device_properties& out, int device) {
    hipDeviceProp_t p{};
    const error status = hipGetDeviceProperties(&p, device);
    int optin = 0;
    if (hipDeviceGetAttribute(&optin, hipDeviceAttributeSharedMemPerBlockOptin, device) !=
        hipSuccess) {
      clear_error();  // AMD GPUs have no opt-in: the message then says 0
      optin = 0;
    }
    out = {p.name,
           p.maxThreadsPerBlock,
           {p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2]},
           {p.maxGridSize[0], p.maxGridSize[1], p.maxGridSize[2]},
           p.sharedMemPerBlock,
           static_cast<std::size_t>(optin),
           p.major,
           p.minor};
    return status;
  }
  static std::chrono::nanoseconds grid_overhead(const gpu::device_properties& p) {
    // The constant is the hardware's: on HIP's NVIDIA platform, the figure measured on CUDA.
    return gpu::grid_overhead_for(grid_overhead_variable, on_nvidia, p.major, p.minor);
  }
  static error mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept {
    return hipMemGetInfo(free_bytes, total_bytes);
  }

  // Streams and events (events never time: they only mark a point of a stream).
  static error stream_create(stream_handle* s) noexcept {
    return hipStreamCreateWithFlags(s, hipStreamNonBlocking);
  }
  static error stream_destroy(stream_handle s) noexcept {
    return hipStreamDestroy(s);
  }
  static error stream_synchronize(stream_handle s) noexcept {
    return hipStreamSynchronize(s);
  }
  static error stream_query(stream_handle s) noexcept {
    return hipStreamQuery(s);
  }
  static error stream_wait_event(stream_handle s, event_handle e) noexcept {
    return hipStreamWaitEvent(s, e, 0);
  }
  static error event_create(event_handle* e) noexcept {
    return hipEventCreateWithFlags(e, hipEventDisableTiming);
  }
  static error event_destroy(event_handle e) noexcept {
    return hipEventDestroy(e);
  }
  static error event_record(event_handle e, stream_handle s) noexcept {
    return hipEventRecord(e, s);
  }
  static error event_query(event_handle e) noexcept {
    return hipEventQuery(e);
  }
  static error event_synchronize(event_handle e) noexcept {
    return hipEventSynchronize(e);
  }

  // Memory.
  static error device_malloc(void** p, std::size_t bytes) noexcept {
    return hipMalloc(p, bytes);
  }
  static error device_free(void* p) noexcept {
    return hipFree(p);
  }
  static error host_alloc(void** p, std::size_t bytes) noexcept {
    return hipHostMalloc(p, bytes, hipHostMallocDefault);
  }
  static error host_alloc_mapped(void** p, std::size_t bytes) noexcept {
    return hipHostMalloc(p, bytes, hipHostMallocMapped);
  }
  static error host_device_pointer(void** on_device, void* host) noexcept {
    return hipHostGetDevicePointer(on_device, host, 0);
  }
  static error free_host(void* p) noexcept {
    return hipHostFree(p);
  }
  static error copy_to_device_async(void* to, const void* from, std::size_t bytes,
                                    stream_handle s) noexcept {
    return hipMemcpyAsync(to, from, bytes, hipMemcpyHostToDevice, s);
  }
  static error copy_to_host_async(void* to, const void* from, std::size_t bytes,
                                  stream_handle s) noexcept {
    return hipMemcpyAsync(to, from, bytes, hipMemcpyDeviceToHost, s);
  }
  static error memset_async(void* p, int value, std::size_t bytes, stream_handle s) noexcept {
    return hipMemsetAsync(p, value, bytes, s);
  }
  /// A pool of device `device`'s memory that keeps what is freed into it, and never lets an
  /// allocation wait behind a free that waits for some stream's kernels.
  static error pool_create(pool_handle* pool, int device) noexcept {
    hipMemPoolProps props{};
    props.allocType = platform::pool_pinned;
    props.location.type = platform::pool_on_device;
    props.location.id = device;
    error status = hipMemPoolCreate(pool, &props);
    std::uint64_t keep_everything = std::numeric_limits<std::uint64_t>::max();
    if (status == hipSuccess) {
      status = hipMemPoolSetAttribute(*pool, platform::pool_release_threshold, &keep_everything);
    }
    int no = 0;
    if (status == hipSuccess) {
      status = hipMemPoolSetAttribute(*pool, platform::pool_reuse_internal, &no);
    }
    return status;
  }
  static error pool_destroy(pool_handle pool) noexcept {
    return hipMemPoolDestroy(pool);
  }
  static error malloc_from_pool_async(void** p, std::size_t bytes, pool_handle pool,
                                      stream_handle s) noexcept {
    return hipMallocFromPoolAsync(p, bytes, pool, s);
  }
  static error free_async(void* p, stream_handle s) noexcept {
    return hipFreeAsync(p, s);
  }

  // Kernels.
  static const void* entry_of(const launch_descriptor& launch) noexcept {
    return launch.hip_entry;
  }
  static error function_get_attributes(function_attributes* out, const void* entry) noexcept {
    return hipFuncGetAttributes(out, entry);
  }
  /// No function is looked up: HIP launches by the entry alone (hipModuleLaunchKernel with
  /// hipGetFuncBySymbol's function, as CUDA's backend does, is not tried yet).
  static error find_function(function_handle* out, const void*) noexcept {
    *out = nullptr;
    return hipSuccess;
  }
  static error launch_kernel(function_handle, const void* entry, const launch_geometry& geometry,
                             void** arguments, stream_handle s) noexcept {
    const dim3 grid{geometry.count.x, geometry.count.y, geometry.count.z};
    const dim3 block{geometry.dim.x, geometry.dim.y, geometry.dim.z};
    return hipLaunchKernel(entry, grid, block, arguments, 0, s);
  }
  /// Launches the clock probe (device_clock.hip) on `s`.
  static error launch_clock_probe(stream_handle s, gpu::clock_probe_mailbox* mailbox,
                                  std::uint64_t budget_ns) noexcept;
  /// Loads the clock probe's code object now (device_clock.hip).
  static error load_clock_probe() noexcept;

  // Graphs, captured on one thread's stream.
  static error stream_begin_capture(stream_handle s) noexcept {
    return hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal);
  }
  static error stream_end_capture(stream_handle s, graph_handle* graph) noexcept {
    return hipStreamEndCapture(s, graph);
  }
  static error graph_instantiate(graph_exec_handle* exec, graph_handle graph) noexcept {
    return hipGraphInstantiate(exec, graph, nullptr, nullptr, 0);
  }
  static error graph_launch(graph_exec_handle exec, stream_handle s) noexcept {
    return hipGraphLaunch(exec, s);
  }
  static error graph_destroy(graph_handle graph) noexcept {
    return hipGraphDestroy(graph);
  }
  static error graph_exec_destroy(graph_exec_handle exec) noexcept {
    return hipGraphExecDestroy(exec);
  }
};

/// Makes a HIP device current for a scope (gpu::device_guard).
using device_guard = gpu::device_guard<hip_runtime>;

}  // namespace launchwatch::detail::hip
