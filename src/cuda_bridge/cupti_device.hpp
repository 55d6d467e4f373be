// The core's questions about CUDA (bridge_core.hpp's bridge_device), answered through CUPTI and
// the CUDA driver already loaded in the process.
#pragma once

#include <cuda.h>

#include <atomic>
#include <mutex>
#include <optional>

#include "bridge_core.hpp"

namespace launchwatch::detail::cuda_bridge {

/// Thread safety: every member is safe from any thread.
class cupti_device final : public bridge_device {
 public:
  /// Looks the driver's functions up in the loaded driver (no link to libcuda, so a program built
  /// with the bridge still starts on a machine without a driver); absent ones answer "no".
  cupti_device() noexcept;

  int device_of(void* context) noexcept override;
  bool capturing(void* stream) noexcept override;
  bool kernel_records_on() noexcept override;
  bool kernel_records_off() noexcept override;
  bool open_window(void* context, void* stream) noexcept override;
  std::optional<profile_duration> close_window(void* stream) override;
  std::optional<kernel_node> describe_kernel_node(const void* node) noexcept override;

  /// Whether CUPTI's kernel records are on now (teardown turns them off).
  [[nodiscard]] bool kernel_records_were_turned_on() const noexcept;

 private:
  /// cuStreamIsCapturing.
  int (*stream_is_capturing_)(void* stream, int* status) = nullptr;
  /// The driver functions that name an explicit kernel node; null when absent.
  CUresult (*kernel_node_params_)(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* params) = nullptr;
  CUresult (*function_name_)(const char** name, CUfunction function) = nullptr;
  CUresult (*kernel_name_)(const char** name, CUkernel kernel) = nullptr;
  CUresult (*current_context_)(CUcontext* context) = nullptr;

  std::mutex records_mutex_;
  std::atomic<bool> kernel_records_on_{false};
  bool kernel_records_failed_ = false;  // guarded by records_mutex_
};

}  // namespace launchwatch::detail::cuda_bridge
