#include "runtime/backend.hpp"

#include <atomic>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>
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

std::string launch_rejected(std::string_view kernel, const device& d, std::string_view why) {
  return fmt::format("launch of `{}` on {} rejected: {}", kernel, label(d), why);
}

std::exception_ptr kernel_failed(std::string_view kernel, const device& d, std::uint64_t stream_id,
                                 std::string_view cause, std::exception_ptr fallback) noexcept {
  try {
    return std::make_exception_ptr(kernel_failure{
        kernel, fmt::format("kernel `{}` failed on {} (stream {}): {}. The launches queued after "
                            "it still ran, and the stream stays usable.",
                            kernel, label(d), stream_id, cause)});
  } catch (...) {
    return fallback ? fallback : std::current_exception();
  }
}

void start_device_runtime() { profiling_logger::instance().start(); }

}  // namespace launchwatch::detail
