// A CPU device: host memory, and streams of worker threads.
#include "backend/cpu/cpu_device.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "backend/cpu/cpu_pool.hpp"
#include "backend/cpu/cpu_stream.hpp"

namespace launchwatch::detail {
namespace {

/// Device memory is aligned for any vector type a kernel might use on it.
constexpr std::size_t memory_alignment = 64;

}  // namespace

cpu_device::cpu_device(int index) : index_{index} {}

std::string cpu_device::name() const {
  return fmt::format("cpu:{} ({} threads)", index_, cpu_pool::instance().size());
}

void* cpu_device::allocate(std::size_t bytes, stream&) {
  // aligned_alloc wants a non-zero multiple of the alignment; a request too large to round up is
  // left at 0 and fails below.
  const std::size_t wanted = std::max<std::size_t>(bytes, 1);
  const std::size_t rounded = wanted <= SIZE_MAX - (memory_alignment - 1)
                                  ? (wanted + memory_alignment - 1) / memory_alignment * memory_alignment
                                  : 0;
  // malloc's family rather than operator new: a failure is a null to turn into launchwatch's error,
  // under the sanitizers too (whose operator new ends the process instead of throwing).
  void* memory = rounded != 0 ? std::aligned_alloc(memory_alignment, rounded) : nullptr;
  if (memory == nullptr) {
    // Said as the CUDA backend says it, so a program handles both the same way (device_error).
    throw device_error{fmt::format(
        "launchwatch: CPU device {} is out of memory: a buffer of {} bytes does not fit in this "
        "process's memory (the allocation failed). Nothing was allocated and the device stays usable: "
        "free buffers or ask for less",
        index_, bytes)};
  }
  return memory;
}

void cpu_device::deallocate(void* memory, std::size_t, std::span<const stream_point> after) noexcept {
  // The launches that referenced the memory may still be queued: free it after them.
  for (const auto& p : after) p.on->wait(p.point);
  std::free(memory);
}

void cpu_device::zero(void* memory, std::size_t bytes, stream&) { std::memset(memory, 0, bytes); }

void cpu_device::copy_to_device(void* destination, const void* source, std::size_t bytes,
                                stream&) {
  std::memcpy(destination, source, bytes);
}

void cpu_device::copy_to_host(void* destination, const void* source, std::size_t bytes, stream&) {
  std::memcpy(destination, source, bytes);
}

std::shared_ptr<stream> cpu_device::create_stream() {
  return std::make_shared<cpu_stream>(shared_from_this());
}

}  // namespace launchwatch::detail
