#include "runtime_api.hpp"

#include <fmt/format.h>

namespace launchwatch::detail::gpu {

std::string readable_bytes(std::size_t bytes) {
  constexpr double kib = 1024.0;
  const auto value = static_cast<double>(bytes);
  if (value >= kib * kib * kib) return fmt::format("{:.1f} GiB", value / (kib * kib * kib));
  if (value >= kib * kib) return fmt::format("{:.1f} MiB", value / (kib * kib));
  if (value >= kib) return fmt::format("{:.1f} KiB", value / kib);
  return fmt::format("{} bytes", bytes);
}

std::string describe_out_of_memory(std::string_view api, std::string_view code, std::size_t bytes,
                                   std::size_t free_bytes, std::size_t total_bytes, int device) {
  std::string text = fmt::format(
      "launchwatch: {} device {} is out of memory: a buffer of {} bytes ({}) does not fit", api,
      device, bytes, readable_bytes(bytes));
  if (total_bytes > 0) {
    text += fmt::format(" in the {} free of its {}", readable_bytes(free_bytes),
                        readable_bytes(total_bytes));
  }
  text += fmt::format(
      " ({}). Nothing was allocated and the device stays usable: free buffers (a buffer's memory "
      "goes back once its launches have run) or ask for less",
      code);
  return text;
}

std::string describe_call_after_fault(std::string_view api, std::string_view call,
                                      std::string_view kernel, int device,
                                      std::string_view first_fault) {
  return fmt::format(
      "launchwatch: {} call {}{} on device {} failed because the device is unusable after a "
      "sticky fault: {}",
      api, call, kernel.empty() ? std::string{} : fmt::format(" for kernel '{}'", kernel), device,
      first_fault);
}

std::string describe_unusable_device(std::string_view api, int device,
                                     std::string_view first_fault) {
  return fmt::format(
      "launchwatch: {} device {} is unusable for the rest of this process after a sticky fault: "
      "{}",
      api, device, first_fault);
}

std::string describe_timing_never_read(std::string_view kernel, std::string_view api, int device) {
  return fmt::format(
      "launchwatch: the timing of kernel '{}' on {} device {} was never read back: deferred "
      "timing stopped (the process is exiting, or the device failed)",
      kernel, api, device);
}

}  // namespace launchwatch::detail::gpu
