// The core's questions about CUDA, through CUPTI and the loaded driver (cupti_device.hpp).
#include "cupti_device.hpp"

#include <cupti.h>

#include "activity_buffers.hpp"
#include "core/interface/diagnostics.hpp"
#include "cupti_calls.hpp"
#include "cupti_functions.hpp"
#include "resolved_timing.hpp"

namespace launchwatch::detail::cuda_bridge {

cupti_device::cupti_device() noexcept {
  // The legacy-stream symbol: a per-thread launch's stream is passed as CU_STREAM_PER_THREAD.
  stream_is_capturing_ = reinterpret_cast<decltype(stream_is_capturing_)>(
      loaded_driver_function("cuStreamIsCapturing"));
  kernel_node_params_ = reinterpret_cast<decltype(kernel_node_params_)>(
      loaded_driver_function("cuGraphKernelNodeGetParams_v2"));
  function_name_ =
      reinterpret_cast<decltype(function_name_)>(loaded_driver_function("cuFuncGetName"));
  kernel_name_ =
      reinterpret_cast<decltype(kernel_name_)>(loaded_driver_function("cuKernelGetName"));
  current_context_ =
      reinterpret_cast<decltype(current_context_)>(loaded_driver_function("cuCtxGetCurrent"));
}

int cupti_device::device_of(void* context) noexcept {
  uint32_t device = 0;
  if (cupti().get_device_id(static_cast<CUcontext>(context), &device) != CUPTI_SUCCESS) device = 0;
  return static_cast<int>(device);
}

bool cupti_device::capturing(void* stream) noexcept {
  if (stream_is_capturing_ == nullptr) return false;
  int status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (stream_is_capturing_(stream, &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool cupti_device::kernel_records_on() noexcept {
  if (kernel_records_on_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock{records_mutex_};
  if (kernel_records_on_.load(std::memory_order_relaxed)) return true;
  if (kernel_records_failed_) return false;
  // Turned on at the first launch that wants device time, and off only at teardown or at the end
  // of a timing window (cuda_timing_windows).
  ready_activity_buffers();
  const CUptiResult r = cupti().activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    kernel_records_failed_ = true;
    diagnostics().warn(
        "The CUDA bridge could not turn on CUPTI's kernel records ({}): foreign launches are "
        "reported but not timed `deferred`.",
        cupti_error(r));
    return false;
  }
  kernel_records_on_.store(true, std::memory_order_release);
  return true;
}

bool cupti_device::kernel_records_off() noexcept {
  std::lock_guard lock{records_mutex_};
  if (!kernel_records_on_.load(std::memory_order_relaxed)) return true;
  if (cupti().activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return false;
  kernel_records_on_.store(false, std::memory_order_release);
  return true;
}

bool cupti_device::kernel_records_were_turned_on() const noexcept {
  return kernel_records_on_.load(std::memory_order_acquire);
}

bool cupti_device::open_window(void* context, void* stream) noexcept {
  return open_resolved_window(context, stream);
}

std::optional<profile_duration> cupti_device::close_window(void* stream) {
  return close_resolved_window(stream);
}

std::optional<kernel_node> cupti_device::describe_kernel_node(const void* node) noexcept {
  if (kernel_node_params_ == nullptr) return std::nullopt;
  CUDA_KERNEL_NODE_PARAMS params{};
  if (kernel_node_params_(static_cast<CUgraphNode>(const_cast<void*>(node)), &params) !=
      CUDA_SUCCESS) {
    return std::nullopt;
  }
  kernel_node described;
  if (params.func != nullptr && function_name_ != nullptr) {
    (void)function_name_(&described.name, params.func);
  } else if (params.kern != nullptr && kernel_name_ != nullptr) {
    (void)kernel_name_(&described.name, params.kern);
  }
  CUcontext context = params.ctx;
  if (context == nullptr && current_context_ != nullptr) (void)current_context_(&context);
  described.context = context;
  described.grid = {params.gridDimX, params.gridDimY, params.gridDimZ};
  described.block = {params.blockDimX, params.blockDimY, params.blockDimZ};
  return described;
}

}  // namespace launchwatch::detail::cuda_bridge
