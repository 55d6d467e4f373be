// One GPU device: its memory, its kernels' attributes, its health and timing state (its streams,
// graphs, clock and timing slots have headers of their own). Definitions in gpu_device_impl.hpp,
// instantiated by each backend (cuda/cuda_device.cpp, hip/hip_device.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "device_health.hpp"
#include "device_timing.hpp"
#include "runtime/backend.hpp"

namespace launchwatch::detail::gpu {

/// One GPU device, as the runtime sees it (backend.hpp's `device`).
template <class R>
class gpu_device final : public device, public std::enable_shared_from_this<gpu_device<R>> {
 public:
  /// Opens device `index`. Throws backend_unavailable when it cannot be used.
  explicit gpu_device(int index);
  ~gpu_device() override;

  std::string_view backend() const noexcept override { return R::wording.backend; }
  int index() const noexcept override { return index_; }
  std::string name() const override { return name_; }
  const device_limits& limits() const noexcept override { return limits_; }

  void* allocate(std::size_t bytes, stream& on) override;
  void deallocate(void* memory, std::size_t bytes,
                  std::span<const stream_point> after) noexcept override;
  void zero(void* memory, std::size_t bytes, stream& on) override;
  void copy_to_device(void* destination, const void* source, std::size_t bytes,
                      stream& on) override;
  void copy_to_host(void* destination, const void* source, std::size_t bytes, stream& on) override;
  std::shared_ptr<stream> create_stream() override;

  /// Checks a launch of `launch` against what the compiler built for its entry (threads per cube,
  /// shared memory), loading the entry's module on first use. Throws invalid_launch.
  void check_attributes(const launch_descriptor& launch);

  /// The entry's function on this device, for R::launch_kernel: looked up with its attributes by
  /// the launch's check_attributes, so null only where the API has none for it.
  /// Thread safety: any thread. Cost: a look into the calling thread's cache of recent kernels.
  typename R::function_handle function_of(const launch_descriptor& launch) {
    return known(launch).function;
  }

  /// The timing state, created on first use (the clock's first anchor is taken then).
  const std::shared_ptr<device_timing<R>>& timing();

  const std::shared_ptr<device_health<R>>& health() const noexcept { return health_; }

  /// Whether this is the only device the process sees, so that no thread can have another one
  /// current: a launch then needs no device_guard (see its `only_device` constructor). Fixed for
  /// the process: the device count does not change once the runtime has started.
  bool only_device() const noexcept { return only_device_; }

 private:
  /// What a launch needs to know of an entry on this device, found once per entry.
  struct known_kernel {
    typename R::function_attributes attributes{};
    typename R::function_handle function{};
  };
  const known_kernel& known(const launch_descriptor& launch);
  void finish_service_work(std::string_view call);

  int index_;
  bool only_device_ = false;
  std::string name_;
  device_limits limits_;
  std::size_t shared_memory_per_block_ = 0;
  std::size_t shared_memory_per_block_optin_ = 0;
  std::shared_ptr<device_health<R>> health_;
  // Memory work runs here, not on the caller's stream: a buffer is created, filled and read
  // outside any capture window and without waiting behind the caller's queued kernels (the runtime
  // writes only new memory and reads only after waiting for its uses).
  typename R::stream_handle service_ = nullptr;
  // Frees wait here, on the device, for the launches that used the memory.
  typename R::stream_handle release_ = nullptr;
  std::mutex release_mutex_;
  typename R::pool_handle pool_ = nullptr;

  std::shared_mutex known_mutex_;
  std::unordered_map<const void*, known_kernel> known_;

  std::chrono::nanoseconds grid_overhead_{0};
  std::uint32_t timing_slots_ = 0;
  std::once_flag timing_once_;
  std::shared_ptr<device_timing<R>> timing_;
};

}  // namespace launchwatch::detail::gpu
