// One CUDA device: its memory, its streams, and the attributes of the kernels it runs.

#include "cuda_device.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "cuda_common/capture_mode.hpp"
#include "cuda_check.hpp"
#include "cuda_stream.hpp"
#include "grid_overhead.hpp"

namespace launchwatch::detail::cuda {

cuda_device::cuda_device(int index)
    : index_{index}, health_{std::make_shared<device_health>(index)} {
  device_guard on{index_};
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, index_), "cudaGetDeviceProperties", index_);
  name_ = properties.name;
  limits_.max_units_per_cube = static_cast<std::uint64_t>(properties.maxThreadsPerBlock);
  limits_.max_cube_dim = ::launchwatch::cube_dim{static_cast<std::uint32_t>(properties.maxThreadsDim[0]),
                                                 static_cast<std::uint32_t>(properties.maxThreadsDim[1]),
                                                 static_cast<std::uint32_t>(properties.maxThreadsDim[2])};
  limits_.max_cube_count = ::launchwatch::cube_count{static_cast<std::uint32_t>(properties.maxGridSize[0]),
                                                     static_cast<std::uint32_t>(properties.maxGridSize[1]),
                                                     static_cast<std::uint32_t>(properties.maxGridSize[2])};
  shared_memory_per_block_ = properties.sharedMemPerBlock;
  // Read now, so a bad LAUNCHWATCH_CUDA_GRID_OVERHEAD_NS fails client::cuda(), not a launch.
  grid_overhead_ = grid_overhead_for(properties.major, properties.minor);
  timing_slots_ = timing_slots_from_environment();
  shared_memory_per_block_optin_ = properties.sharedMemPerBlockOptin;
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount", index_);
  only_device_ = count == 1;

  check(cudaStreamCreateWithFlags(&service_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
        index_);
  // Deferred timing's own kernel is loaded with the device, not at the first timed launch, which
  // may come while the program's kernels hold every SM (review finding 18).
  device_clock::load_probe(index_);
  check(cudaStreamCreateWithFlags(&release_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
        index_);
  // A pool of our own, so its settings don't change the program's: freed memory stays in it rather
  // than going back to the driver at each synchronisation, and an allocation never waits behind a
  // free that is itself waiting for some stream's kernels.
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = index_;
  check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate", index_);
  std::uint64_t keep_everything = std::numeric_limits<std::uint64_t>::max();
  check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything),
        "cudaMemPoolSetAttribute", index_);
  int no = 0;
  check(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &no),
        "cudaMemPoolSetAttribute", index_);
}

cuda_device::~cuda_device() {
  (void)cudaStreamSynchronize(release_);
  (void)cudaStreamSynchronize(service_);
  (void)cudaStreamDestroy(release_);
  (void)cudaStreamDestroy(service_);
  (void)cudaMemPoolDestroy(pool_);
}

void cuda_device::finish_service_work(std::string_view call) {
  health_->check(cudaStreamSynchronize(service_), call);
}

void* cuda_device::allocate(std::size_t bytes, stream& /*on*/) {
  health_->throw_if_failed();
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  void* memory = nullptr;
  const cudaError_t status = cudaMallocFromPoolAsync(&memory, bytes, pool_, service_);
  if (status == cudaErrorMemoryAllocation) [[unlikely]] {
    // Said with the size and what was free: CUDA's own "out of memory" names neither.
    (void)cudaGetLastError();
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      total_bytes = 0;
    }
    throw device_error{describe_out_of_memory(bytes, free_bytes, total_bytes, index_)};
  }
  health_->check(status, "cudaMallocFromPoolAsync");
  // Synchronised so the memory may be used on any stream at once; the service stream holds only
  // memory work, so this waits for no kernel.
  finish_service_work("cudaStreamSynchronize (after an allocation)");
  return memory;
}

void cuda_device::deallocate(void* memory, std::size_t /*bytes*/,
                             std::span<const stream_point> after) noexcept {
  if (memory == nullptr) return;
  try {
    device_guard on{index_};
    relaxed_capture_mode relaxed;
    std::lock_guard lock{release_mutex_};
    // The free waits on the device, not here, for every launch that used the memory.
    for (const stream_point& use : after) {
      auto* s = static_cast<cuda_stream*>(use.on);
      if (s != nullptr && !s->passed(use.point)) s->order_before(release_);
    }
    (void)cudaFreeAsync(memory, release_);
  } catch (...) {
    // A device that failed cannot free anything; the memory goes with the process.
  }
}

void cuda_device::zero(void* memory, std::size_t bytes, stream& /*on*/) {
  health_->throw_if_failed();
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  health_->check(cudaMemsetAsync(memory, 0, bytes, service_), "cudaMemsetAsync");
  finish_service_work("cudaStreamSynchronize (after zeroing a buffer)");
}

void cuda_device::copy_to_device(void* destination, const void* source, std::size_t bytes,
                                 stream& /*on*/) {
  health_->throw_if_failed();
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  health_->check(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyHostToDevice, service_),
                 "cudaMemcpyAsync (host to device)");
  finish_service_work("cudaStreamSynchronize (after a copy to the device)");
}

void cuda_device::copy_to_host(void* destination, const void* source, std::size_t bytes,
                               stream& /*on*/) {
  health_->throw_if_failed();
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  health_->check(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToHost, service_),
                 "cudaMemcpyAsync (device to host)");
  finish_service_work("cudaStreamSynchronize (after a copy to the host)");
}

std::shared_ptr<stream> cuda_device::create_stream() {
  health_->throw_if_failed();
  return std::make_shared<cuda_stream>(shared_from_this());
}

const cudaFuncAttributes& cuda_device::attributes_of(const launch_descriptor& launch) {
  // Each thread remembers where the attributes of the kernels it launched lately are, so a launch
  // takes no lock even when a program alternates between kernels (a layer's dozen ops, say), where
  // remembering only the last one would send nearly every launch through the shared lock, whose
  // count every launching thread writes. Direct-mapped by entry address: a collision costs a trip
  // to the map. What is remembered never goes stale: an entry's attributes are set once, in a map
  // whose elements never move or go, of a device that lives as long as the process.
  struct remembered {
    const cuda_device* device = nullptr;
    const void* entry = nullptr;
    const cudaFuncAttributes* attributes = nullptr;
  };
  constexpr unsigned remembered_bits = 6;
  thread_local std::array<remembered, std::size_t{1} << remembered_bits> recent{};
  // Fibonacci hashing: the top bits of the product depend on every bit of the address.
  remembered& slot = recent[static_cast<std::size_t>(
      (reinterpret_cast<std::uintptr_t>(launch.cuda_entry) * std::uint64_t{0x9E3779B97F4A7C15}) >>
      (64 - remembered_bits))];
  if (slot.device == this && slot.entry == launch.cuda_entry) return *slot.attributes;
  {
    std::shared_lock lock{attributes_mutex_};
    if (auto found = attributes_.find(launch.cuda_entry); found != attributes_.end()) {
      slot = {this, launch.cuda_entry, &found->second};
      return found->second;
    }
  }
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  cudaFuncAttributes attributes{};
  // Loads the entry's module (CUDA loads modules lazily), which is what a dry run prepares.
  const cudaError_t status = cudaFuncGetAttributes(&attributes, launch.cuda_entry);
  if (status == cudaErrorInvalidDeviceFunction || status == cudaErrorNoKernelImageForDevice ||
      status == cudaErrorInvalidPtx || status == cudaErrorUnsupportedPtxVersion) {
    (void)cudaGetLastError();
    throw invalid_launch{launch_rejected(
        launch.name, *this,
        fmt::format(
            "the kernel has no code this device ({}) can run: {} ({}). Either the file that "
            "launches it was compiled for another GPU architecture (set CMAKE_CUDA_ARCHITECTURES "
            "to include this one: 90 for an H100 or H200), or it was linked against a second, "
            "static copy of the CUDA runtime (CMake's default for CUDA targets) that launchwatch's "
            "shared one does not know: set the target's CUDA_RUNTIME_LIBRARY to Shared",
            name_, cudaGetErrorName(status), cudaGetErrorString(status)))};
  }
  health_->check(status, "cudaFuncGetAttributes", launch.name);
  std::unique_lock lock{attributes_mutex_};
  auto [at, inserted] = attributes_.emplace(launch.cuda_entry, attributes);
  slot = {this, launch.cuda_entry, &at->second};
  return at->second;
}

void cuda_device::check_attributes(const launch_descriptor& launch) {
  if (launch.cuda_entry == nullptr) {
    throw invalid_launch{launch_rejected(
        launch.name, *this,
        "the file that launched it was not compiled by nvcc, so no CUDA entry was instantiated "
        "for it. Compile that file as CUDA (name it .cu, or set_source_files_properties(FILE "
        "PROPERTIES LANGUAGE CUDA)), or launch it through client::cpu()")};
  }
  const cudaFuncAttributes& attributes = attributes_of(launch);
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

const std::shared_ptr<device_timing>& cuda_device::timing() {
  std::call_once(timing_once_,
                 [&] { timing_ = std::make_shared<device_timing>(index_, health_, grid_overhead_, timing_slots_); });
  return timing_;
}

}  // namespace launchwatch::detail::cuda
