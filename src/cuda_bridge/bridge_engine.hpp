// The CUDA bridge's engine: one per process while any cuda_bridge lives (cuda_bridge.cpp shares
// it). It owns the CUPTI subscription, turns CUPTI's launch callbacks into launch-path calls, and
// tears CUPTI down again.
#pragma once

#include <cupti.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include <launchwatch/cuda_bridge.hpp>

#include "graph_replays.hpp"
#include "kernel_records.hpp"

namespace launchwatch::detail {

namespace cuda_bridge {
struct thread_state;
}

class cuda_bridge_engine {
 public:
  /// Subscribes to CUPTI, or throws cuda_bridge_unavailable (configuration_error for a bad
  /// LAUNCHWATCH_CUPTI) leaving nothing subscribed.
  explicit cuda_bridge_engine(const cuda_bridge_options& options);
  /// Stops reporting, waits for the devices it saw, delivers what is pending, gives CUPTI back.
  ~cuda_bridge_engine();
  cuda_bridge_engine(const cuda_bridge_engine&) = delete;
  cuda_bridge_engine& operator=(const cuda_bridge_engine&) = delete;

  void flush();
  cuda_bridge_stats stats() const noexcept;

 private:
  /// CUPTI's callback: `self` is the engine.
  static void CUPTIAPI on_callback(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                   const void* data);
  /// launch_watch_writer's listener: launch callbacks on while something watches, off otherwise.
  static void on_watch_change() noexcept;

  /// Sets what every foreign launch says of itself (kernel name, backend, device, grid, block,
  /// collective) and resets the rest; the caller adds stream, capturing and launch_id.
  void describe(launch_info& info, const char* symbol, void* context, std::array<std::uint32_t, 3> grid,
                std::array<std::uint32_t, 3> block, cuda_bridge::thread_state& t);
  void enter_launch(CUpti_CallbackId id, const CUpti_CallbackData& call, cuda_bridge::thread_state& t);
  void exit_launch(const CUpti_CallbackData& call, cuda_bridge::thread_state& t);
  void enter_graph_launch(CUpti_CallbackId id, const CUpti_CallbackData& call);
  void on_graph_node(CUpti_CallbackId id, const CUpti_ResourceData& resource);
  /// A kernel node added to a graph by the explicit graph API (cudaGraphAddKernelNode), outside
  /// any capture: reported as a launch recorded into a graph, on the thread that added it.
  void report_kernel_node(const CUpti_GraphData& graph);
  void apply_watch_state() noexcept;
  bool ensure_kernel_records() noexcept;
  int device_of(void* context, cuda_bridge::thread_state& t) noexcept;
  bool capturing(void* stream) noexcept;
  void synchronize_seen_devices() noexcept;
  void teardown() noexcept;

  /// Counts a callback in flight; false (counting nothing) once the engine is being torn down.
  bool enter_callback() noexcept;
  void leave_callback() noexcept;

  const cuda_bridge_options options_;
  /// Distinguishes this engine's launches from an earlier one's in a thread's state.
  const std::uint64_t generation_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::shared_ptr<cuda_bridge::kernel_records> records_;
  cuda_bridge::graph_replays graphs_;
  /// cuStreamIsCapturing, from the driver through the runtime (no link to libcuda, so a program
  /// built with the bridge still starts on a machine without a driver).
  int (*stream_is_capturing_)(void* stream, int* status) = nullptr;
  /// The driver functions that name an explicit kernel node, from the loaded driver; null when absent.
  CUresult (*kernel_node_params_)(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* params) = nullptr;
  CUresult (*function_name_)(const char** name, CUfunction function) = nullptr;
  CUresult (*kernel_name_)(const char** name, CUkernel kernel) = nullptr;
  CUresult (*current_context_)(CUcontext* context) = nullptr;
  /// Numbers explicit kernel nodes for their launch_info::launch_id (see report_kernel_node).
  std::atomic<std::uint32_t> explicit_nodes_{0};

  std::mutex toggle_mutex_;
  bool launch_callbacks_on_ = false;
  std::mutex records_mutex_;
  std::atomic<bool> kernel_records_on_{false};
  bool kernel_records_failed_ = false;

  std::atomic<bool> alive_{true};
  std::atomic<int> in_flight_{0};
  std::atomic<bool> in_range_{true};
  std::atomic<std::uint64_t> devices_seen_{0};

  std::atomic<std::uint64_t> launches_reported_{0};
  std::atomic<std::uint64_t> own_launches_skipped_{0};
  std::atomic<std::uint64_t> outside_capture_range_{0};
};

}  // namespace launchwatch::detail
