#include "runtime/backend.hpp"

#include <atomic>

#include <fmt/format.h>

#include <launchwatch/logger.hpp>

namespace launchwatch::detail {
namespace {

// Ids start at 1 so that 0 can mean "no device" in a default-constructed span's owner tag.
std::uint64_t next_id(std::atomic<std::uint64_t>& counter) noexcept {
  return counter.fetch_add(1, std::memory_order_relaxed);
}

std::atomic<std::uint64_t> device_ids{1};
std::atomic<std::uint64_t> stream_ids{1};

}  // namespace

stream::stream() : id_{next_id(stream_ids)} {}

device::device() : id_{next_id(device_ids)} {}

std::string label(const device& d) { return fmt::format("{}:{}", d.backend(), d.index()); }

void start_device_runtime() { profiling_logger::instance().start(); }

}  // namespace launchwatch::detail
