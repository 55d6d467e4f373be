// The exchange by which the host reads a GPU's timer: the mailbox both sides see, and the probe
// kernel's loop. Included by each backend's kernel file (compiled by nvcc or by HIP's clang), and
// by the host side (device_clock.hpp), which sees only the mailbox.
#pragma once

#include <cstdint>
#include <limits>

namespace launchwatch::detail::gpu {

/// Shared by the probe kernel and the host through mapped pinned memory. The host writes `request`;
/// the probe answers with its timer reading and then echoes the request, in that order.
struct clock_probe_mailbox {
  std::uint64_t request;
  std::uint64_t answered;
  std::uint64_t device_ns;
  std::uint64_t started;
};

/// The request that tells the probe to return.
inline constexpr std::uint64_t stop_request = std::numeric_limits<std::uint64_t>::max();

#if defined(__CUDACC__) || defined(__HIP__)

/// The probe kernel's body: answers each new request with `Timer::now()` (nanoseconds) until told
/// to stop, or until `budget_ns` has passed, so a host that stopped asking (it threw, or gave up
/// waiting) never leaves a kernel spinning on the device.
template <class Timer>
__device__ void answer_clock_probes(clock_probe_mailbox* box, std::uint64_t budget_ns) {
  volatile clock_probe_mailbox* mail = box;
  const std::uint64_t began = Timer::now();
  mail->started = 1;
  __threadfence_system();
  std::uint64_t answered = 0;
  for (;;) {
    const std::uint64_t request = mail->request;
    if (request == stop_request) return;
    if (request != answered) {
      mail->device_ns = Timer::now();
      __threadfence_system();
      mail->answered = request;
      answered = request;
    } else if (Timer::now() - began > budget_ns) {
      return;
    }
  }
}

#endif

}  // namespace launchwatch::detail::gpu
