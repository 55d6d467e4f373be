// The CUDA runtime API as the shared GPU backend calls it (backend/gpu/runtime_api.hpp says why and
// what a runtime class provides). One line a call: the only place the CUDA backend differs from
// the HIP backend, besides its errors (cuda_check.hpp) and its kernels (device_clock.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "backend/gpu/clock_probe.hpp"
#include "backend/gpu/device_guard.hpp"
#include "backend/gpu/runtime_api.hpp"
#include "cuda_check.hpp"
#include "cuda_common/capture_mode.hpp"
#include "entry_launch.hpp"
#include "grid_overhead.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::cuda {

/// The CUDA runtime, for the templates of backend/gpu. Calls return CUDA's status unchanged.
struct cuda_runtime {
  using error = cudaError_t;
  using stream_handle = cudaStream_t;
  using event_handle = cudaEvent_t;
  using graph_handle = cudaGraph_t;
  using graph_exec_handle = cudaGraphExec_t;
  using pool_handle = cudaMemPool_t;
  using function_attributes = cudaFuncAttributes;
  using function_handle = cudaFunction_t;
  using relaxed_capture_mode = cuda::relaxed_capture_mode;

  static constexpr error success = cudaSuccess;
  static constexpr error not_ready = cudaErrorNotReady;
  static constexpr error out_of_memory = cudaErrorMemoryAllocation;
  static constexpr error capture_wrong_thread = cudaErrorStreamCaptureWrongThread;
  static constexpr error capture_invalidated = cudaErrorStreamCaptureInvalidated;

  static constexpr gpu::api_wording wording{
      .api = "CUDA",
      .prefix = "cuda",
      .backend = "cuda",
      .no_entry =
          "the file that launched it was not compiled by nvcc, so no CUDA entry was instantiated "
          "for it. Compile that file as CUDA (name it .cu, or set_source_files_properties(FILE "
          "PROPERTIES LANGUAGE CUDA)), or launch it through client::cpu()",
      .architecture_hint =
          "Either the file that launches it was compiled for another GPU architecture (set "
          "CMAKE_CUDA_ARCHITECTURES to include this one: 90 for an H100 or H200), or it was linked "
          "against a second, static copy of the CUDA runtime (CMake's default for CUDA targets) "
          "that launchwatch's shared one does not know: set the target's CUDA_RUNTIME_LIBRARY to "
          "Shared",
      .sanitizer = "compute-sanitizer",
      .graph_replay = "(CUDA graph replay)",
      .no_device =
          "This machine has no NVIDIA GPU, or its driver is missing or older than the CUDA "
          "runtime launchwatch was built with",
      .visible_devices = "CUDA_VISIBLE_DEVICES",
  };
  static constexpr std::string_view timing_slots_variable = "LAUNCHWATCH_CUDA_TIMING_SLOTS";

  // Errors (cuda_check.hpp).
  static void clear_error() noexcept { (void)cudaGetLastError(); }
  static bool is_sticky(error status) noexcept { return cuda::is_sticky(status); }
  static bool lacks_code_for_device(error status) noexcept {
    return status == cudaErrorInvalidDeviceFunction || status == cudaErrorNoKernelImageForDevice ||
           status == cudaErrorInvalidPtx || status == cudaErrorUnsupportedPtxVersion;
  }
  static const char* error_name(error status) noexcept { return cudaGetErrorName(status); }
  static const char* error_string(error status) noexcept { return cudaGetErrorString(status); }
  static std::string describe_failure(error status, std::string_view call, std::string_view kernel,
                                      int device) {
    return cuda::describe_failure(status, call, kernel, device);
  }
  [[noreturn]] static void throw_failure(error status, std::string_view call,
                                         std::string_view kernel, int device) {
    cuda::throw_failure(status, call, kernel, device);
  }
  static std::string describe_out_of_memory(std::size_t bytes, std::size_t free_bytes,
                                            std::size_t total_bytes, int device) {
    return cuda::describe_out_of_memory(bytes, free_bytes, total_bytes, device);
  }

  // Devices.
  static error get_device(int* device) noexcept { return cudaGetDevice(device); }
  static error set_device(int device) noexcept { return cudaSetDevice(device); }
  static error get_device_count(int* count) noexcept { return cudaGetDeviceCount(count); }
  static error get_properties(gpu::device_properties& out, int device) {
    cudaDeviceProp p{};
    const error status = cudaGetDeviceProperties(&p, device);
    out = {p.name,
           p.maxThreadsPerBlock,
           {p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2]},
           {p.maxGridSize[0], p.maxGridSize[1], p.maxGridSize[2]},
           p.sharedMemPerBlock,
           p.sharedMemPerBlockOptin,
           p.major,
           p.minor};
    return status;
  }
  static std::chrono::nanoseconds grid_overhead(const gpu::device_properties& p) {
    return grid_overhead_for(p.major, p.minor);
  }
  static error mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept {
    return cudaMemGetInfo(free_bytes, total_bytes);
  }

  // Streams and events (events never time: they only mark a point of a stream).
  static error stream_create(stream_handle* s) noexcept {
    return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
  }
  static error stream_destroy(stream_handle s) noexcept { return cudaStreamDestroy(s); }
  static error stream_synchronize(stream_handle s) noexcept { return cudaStreamSynchronize(s); }
  static error stream_query(stream_handle s) noexcept { return cudaStreamQuery(s); }
  static error stream_wait_event(stream_handle s, event_handle e) noexcept {
    return cudaStreamWaitEvent(s, e, 0);
  }
  static error event_create(event_handle* e) noexcept {
    return cudaEventCreateWithFlags(e, cudaEventDisableTiming);
  }
  static error event_destroy(event_handle e) noexcept { return cudaEventDestroy(e); }
  static error event_record(event_handle e, stream_handle s) noexcept {
    return cudaEventRecord(e, s);
  }
  static error event_query(event_handle e) noexcept { return cudaEventQuery(e); }
  static error event_synchronize(event_handle e) noexcept { return cudaEventSynchronize(e); }

  // Memory.
  static error device_malloc(void** p, std::size_t bytes) noexcept { return cudaMalloc(p, bytes); }
  static error device_free(void* p) noexcept { return cudaFree(p); }
  static error host_alloc(void** p, std::size_t bytes) noexcept {
    return cudaHostAlloc(p, bytes, cudaHostAllocDefault);
  }
  static error host_alloc_mapped(void** p, std::size_t bytes) noexcept {
    return cudaHostAlloc(p, bytes, cudaHostAllocMapped);
  }
  static error host_device_pointer(void** on_device, void* host) noexcept {
    return cudaHostGetDevicePointer(on_device, host, 0);
  }
  static error free_host(void* p) noexcept { return cudaFreeHost(p); }
  static error copy_to_device_async(void* to, const void* from, std::size_t bytes,
                                    stream_handle s) noexcept {
    return cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, s);
  }
  static error copy_to_host_async(void* to, const void* from, std::size_t bytes,
                                  stream_handle s) noexcept {
    return cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, s);
  }
  static error memset_async(void* p, int value, std::size_t bytes, stream_handle s) noexcept {
    return cudaMemsetAsync(p, value, bytes, s);
  }
  /// A pool of device `device`'s memory that keeps what is freed into it, and never lets an
  /// allocation wait behind a free that waits for some stream's kernels.
  static error pool_create(pool_handle* pool, int device) noexcept {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    error status = cudaMemPoolCreate(pool, &props);
    std::uint64_t keep_everything = std::numeric_limits<std::uint64_t>::max();
    if (status == cudaSuccess) {
      status = cudaMemPoolSetAttribute(*pool, cudaMemPoolAttrReleaseThreshold, &keep_everything);
    }
    int no = 0;
    if (status == cudaSuccess) {
      status = cudaMemPoolSetAttribute(*pool, cudaMemPoolReuseAllowInternalDependencies, &no);
    }
    return status;
  }
  static error pool_destroy(pool_handle pool) noexcept { return cudaMemPoolDestroy(pool); }
  static error malloc_from_pool_async(void** p, std::size_t bytes, pool_handle pool,
                                      stream_handle s) noexcept {
    return cudaMallocFromPoolAsync(p, bytes, pool, s);
  }
  static error free_async(void* p, stream_handle s) noexcept { return cudaFreeAsync(p, s); }

  // Kernels.
  static const void* entry_of(const launch_descriptor& launch) noexcept {
    return launch.cuda_entry;
  }
  static error function_get_attributes(function_attributes* out, const void* entry) noexcept {
    return cudaFuncGetAttributes(out, entry);
  }
  /// The entry's function in the current device's context, for launch_kernel.
  static error find_function(function_handle* out, const void* entry) noexcept {
    return cudaGetFuncBySymbol(out, entry);
  }
  /// Through the driver's call with `function` where it can (entry_launch.hpp), else the runtime's.
  static error launch_kernel(function_handle function, const void* entry,
                             const launch_geometry& geometry, void** arguments,
                             stream_handle s) noexcept {
    const dim3 grid{geometry.count.x, geometry.count.y, geometry.count.z};
    const dim3 block{geometry.dim.x, geometry.dim.y, geometry.dim.z};
    return launch_entry(function, entry, grid, block, arguments, s).status;
  }
  /// Launches the clock probe (device_clock.cu) on `s`.
  static error launch_clock_probe(stream_handle s, gpu::clock_probe_mailbox* mailbox,
                                  std::uint64_t budget_ns) noexcept;
  /// Loads the clock probe's module now (device_clock.cu).
  static error load_clock_probe() noexcept;

  // Graphs, captured on one thread's stream.
  static error stream_begin_capture(stream_handle s) noexcept {
    return cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  }
  static error stream_end_capture(stream_handle s, graph_handle* graph) noexcept {
    return cudaStreamEndCapture(s, graph);
  }
  static error graph_instantiate(graph_exec_handle* exec, graph_handle graph) noexcept {
    return cudaGraphInstantiate(exec, graph, 0);
  }
  static error graph_launch(graph_exec_handle exec, stream_handle s) noexcept {
    return cudaGraphLaunch(exec, s);
  }
  static error graph_destroy(graph_handle graph) noexcept { return cudaGraphDestroy(graph); }
  static error graph_exec_destroy(graph_exec_handle exec) noexcept {
    return cudaGraphExecDestroy(exec);
  }
};

/// Makes a CUDA device current for a scope (gpu::device_guard).
using device_guard = gpu::device_guard<cuda_runtime>;

}  // namespace launchwatch::detail::cuda
