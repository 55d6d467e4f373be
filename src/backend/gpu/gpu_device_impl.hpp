// gpu_device's members. Included only by the file that instantiates gpu_device for a runtime.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "device_guard.hpp"
#include "gpu_device.hpp"
#include "gpu_stream.hpp"
#include "runtime_api.hpp"

namespace launchwatch::detail::gpu {

template <class R>
gpu_device<R>::gpu_device(int index)
    : index_{index}, health_{std::make_shared<device_health<R>>(index)} {
  device_guard<R> on{index_};
  device_properties properties;
  check<R>(R::get_properties(properties, index_), "GetDeviceProperties", index_);
  name_ = properties.name;
  const auto extent = [](int value) { return static_cast<std::uint32_t>(value); };
  limits_.max_units_per_cube = static_cast<std::uint64_t>(properties.max_threads_per_block);
  limits_.max_cube_dim = ::launchwatch::cube_dim{extent(properties.max_threads_dim[0]),
                                                 extent(properties.max_threads_dim[1]),
                                                 extent(properties.max_threads_dim[2])};
  limits_.max_cube_count = ::launchwatch::cube_count{extent(properties.max_grid_size[0]),
                                                     extent(properties.max_grid_size[1]),
                                                     extent(properties.max_grid_size[2])};
  shared_memory_per_block_ = properties.shared_memory_per_block;
  shared_memory_per_block_optin_ = properties.shared_memory_per_block_optin;
  // Read now, so a bad grid overhead or slot count in the environment fails client::<backend>(),
  // not a launch.
  grid_overhead_ = R::grid_overhead(properties);
  timing_slots_ = timing_slots_from_environment(R::timing_slots_variable);
  int count = 0;
  check<R>(R::get_device_count(&count), "GetDeviceCount", index_);
  only_device_ = count == 1;

  check<R>(R::stream_create(&service_), "StreamCreateWithFlags", index_);
  // Deferred timing's own kernel is loaded with the device, not at the first timed launch, which
  // may come while the program's kernels hold every multiprocessor (review finding 18).
  device_clock<R>::load_probe(index_);
  check<R>(R::stream_create(&release_), "StreamCreateWithFlags", index_);
  // A pool of our own, so its settings don't change the program's: freed memory stays in it rather
  // than going back to the driver at each synchronisation, and an allocation never waits behind a
  // free that is itself waiting for some stream's kernels.
  check<R>(R::pool_create(&pool_, index_), "MemPoolCreate", index_);
}

template <class R>
gpu_device<R>::~gpu_device() {
  (void)R::stream_synchronize(release_);
  (void)R::stream_synchronize(service_);
  (void)R::stream_destroy(release_);
  (void)R::stream_destroy(service_);
  (void)R::pool_destroy(pool_);
}

template <class R>
void gpu_device<R>::finish_service_work(std::string_view call) {
  health_->check(R::stream_synchronize(service_), call);
}

template <class R>
void* gpu_device<R>::allocate(std::size_t bytes, stream& /*on*/) {
  health_->throw_if_failed();
  device_guard<R> on{index_};
  typename R::relaxed_capture_mode relaxed;
  void* memory = nullptr;
  const typename R::error status = R::malloc_from_pool_async(&memory, bytes, pool_, service_);
  if (status == R::out_of_memory) [[unlikely]] {
    // Said with the size and what was free: the API's own "out of memory" names neither.
    R::clear_error();
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (R::mem_get_info(&free_bytes, &total_bytes) != R::success) {
      R::clear_error();
      total_bytes = 0;
    }
    throw device_error{R::describe_out_of_memory(bytes, free_bytes, total_bytes, index_)};
  }
  health_->check(status, "MallocFromPoolAsync");
  // Synchronised so the memory may be used on any stream at once; the service stream holds only
  // memory work, so this waits for no kernel.
  finish_service_work("StreamSynchronize (after an allocation)");
  return memory;
}

template <class R>
void gpu_device<R>::deallocate(void* memory, std::size_t /*bytes*/,
                               std::span<const stream_point> after) noexcept {
  if (memory == nullptr) return;
  try {
    device_guard<R> on{index_};
    typename R::relaxed_capture_mode relaxed;
    std::lock_guard lock{release_mutex_};
    // The free waits on the device, not here, for every launch that used the memory.
    for (const stream_point& use : after) {
      auto* s = static_cast<gpu_stream<R>*>(use.on);
      if (s != nullptr && !s->passed(use.point)) s->order_before(release_);
    }
    (void)R::free_async(memory, release_);
  } catch (...) {
    // A device that failed cannot free anything; the memory goes with the process.
  }
}

template <class R>
void gpu_device<R>::zero(void* memory, std::size_t bytes, stream& /*on*/) {
  health_->throw_if_failed();
  device_guard<R> on{index_};
  typename R::relaxed_capture_mode relaxed;
  health_->check(R::memset_async(memory, 0, bytes, service_), "MemsetAsync");
  finish_service_work("StreamSynchronize (after zeroing a buffer)");
}

template <class R>
void gpu_device<R>::copy_to_device(void* destination, const void* source, std::size_t bytes,
                                   stream& /*on*/) {
  health_->throw_if_failed();
  device_guard<R> on{index_};
  typename R::relaxed_capture_mode relaxed;
  health_->check(R::copy_to_device_async(destination, source, bytes, service_),
                 "MemcpyAsync (host to device)");
  finish_service_work("StreamSynchronize (after a copy to the device)");
}

template <class R>
void gpu_device<R>::copy_to_host(void* destination, const void* source, std::size_t bytes,
                                 stream& /*on*/) {
  health_->throw_if_failed();
  device_guard<R> on{index_};
  typename R::relaxed_capture_mode relaxed;
  health_->check(R::copy_to_host_async(destination, source, bytes, service_),
                 "MemcpyAsync (device to host)");
  finish_service_work("StreamSynchronize (after a copy to the host)");
}

template <class R>
std::shared_ptr<stream> gpu_device<R>::create_stream() {
  health_->throw_if_failed();
  return std::make_shared<gpu_stream<R>>(this->shared_from_this());
}

template <class R>
const typename gpu_device<R>::known_kernel& gpu_device<R>::known(const launch_descriptor& launch) {
  // Each thread remembers where what it knows of the kernels it launched lately is, so a launch
  // takes no lock even when a program alternates between kernels (a layer's dozen ops, say), where
  // remembering only the last one would send nearly every launch through the shared lock, whose
  // count every launching thread writes. Direct-mapped by entry address: a collision costs a trip
  // to the map. What is remembered never goes stale: an entry is found once, in a map whose
  // elements never move or go, of a device that lives as long as the process.
  struct remembered {
    const gpu_device* device = nullptr;
    const void* entry = nullptr;
    const known_kernel* kernel = nullptr;
  };
  constexpr unsigned remembered_bits = 6;
  thread_local std::array<remembered, std::size_t{1} << remembered_bits> recent{};
  const void* const entry = R::entry_of(launch);
  // Fibonacci hashing: the top bits of the product depend on every bit of the address.
  remembered& slot = recent[static_cast<std::size_t>(
      (reinterpret_cast<std::uintptr_t>(entry) * std::uint64_t{0x9E3779B97F4A7C15}) >>
      (64 - remembered_bits))];
  if (slot.device == this && slot.entry == entry) return *slot.kernel;
  {
    std::shared_lock lock{known_mutex_};
    if (auto found = known_.find(entry); found != known_.end()) {
      slot = {this, entry, &found->second};
      return found->second;
    }
  }
  device_guard<R> on{index_};
  typename R::relaxed_capture_mode relaxed;
  known_kernel kernel;
  // Loads the entry's module (modules load lazily), which is what a dry run prepares.
  const typename R::error status = R::function_get_attributes(&kernel.attributes, entry);
  if (R::lacks_code_for_device(status)) {
    R::clear_error();
    throw invalid_launch{launch_rejected(
        launch.name, *this,
        fmt::format("the kernel has no code this device ({}) can run: {} ({}). {}", name_,
                    R::error_name(status), R::error_string(status), R::wording.architecture_hint))};
  }
  health_->check(status, "FuncGetAttributes", launch.name);
  // Without a function the API's launch by entry is used: slower, never wrong.
  if (R::find_function(&kernel.function, entry) != R::success) {
    R::clear_error();
    kernel.function = {};
  }
  std::unique_lock lock{known_mutex_};
  auto [at, inserted] = known_.emplace(entry, kernel);
  slot = {this, entry, &at->second};
  return at->second;
}

template <class R>
void gpu_device<R>::check_attributes(const launch_descriptor& launch) {
  if (R::entry_of(launch) == nullptr) {
    throw invalid_launch{launch_rejected(launch.name, *this, R::wording.no_entry)};
  }
  const typename R::function_attributes& attributes = known(launch).attributes;
  const ::launchwatch::cube_dim dim = launch.geometry.dim;
  const std::uint64_t units = dim.total();
  if (units > static_cast<std::uint64_t>(attributes.maxThreadsPerBlock)) {
    throw invalid_launch{launch_rejected(
        launch.name, *this,
        fmt::format("it has {} units per cube ({}x{}x{}), but as compiled for this device it can "
                    "run at most {} per cube: it uses {} registers per unit. Launch it with "
                    "smaller cubes, or make it use fewer registers",
                    units, dim.x, dim.y, dim.z, attributes.maxThreadsPerBlock,
                    attributes.numRegs))};
  }
  if (attributes.sharedSizeBytes > shared_memory_per_block_) {
    throw invalid_launch{launch_rejected(
        launch.name, *this,
        fmt::format("it declares {} bytes of shared memory per cube, over the {} bytes this device "
                    "gives a cube without opting in (up to {} with opt-in, which launchwatch does "
                    "not do): use less shared memory",
                    attributes.sharedSizeBytes, shared_memory_per_block_,
                    shared_memory_per_block_optin_))};
  }
}

template <class R>
const std::shared_ptr<device_timing<R>>& gpu_device<R>::timing() {
  std::call_once(timing_once_, [&] {
    timing_ = std::make_shared<device_timing<R>>(index_, health_, grid_overhead_, timing_slots_);
  });
  return timing_;
}

}  // namespace launchwatch::detail::gpu
