#include "device_clock.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <tuple>
#include <utility>
#include <atomic>
#include <limits>
#include <thread>

#include <launchwatch/detail/cuda_entry.hpp>
#include <launchwatch/launch_path.hpp>

#include "cuda_check.hpp"

namespace launchwatch::detail::cuda {

// Shared by the probe kernel and the host through mapped pinned memory. The host writes `request`;
// the probe answers with its timer reading and then echoes the request, in that order.
struct clock_probe_mailbox {
  std::uint64_t request;
  std::uint64_t answered;
  std::uint64_t device_ns;
  std::uint64_t started;
};

namespace {

constexpr std::uint64_t stop_request = std::numeric_limits<std::uint64_t>::max();
constexpr int exchanges_per_anchor = 16;
// The probe gives up on its own after this long, so a host that stopped asking (it threw, or gave
// up waiting) never leaves a kernel spinning on the device.
constexpr std::uint64_t probe_budget_ns = 50'000'000;
// A span shorter than this gives too noisy a rate; use the nominal one.
constexpr std::int64_t min_slope_span_ns = 250'000'000;
// Oscillators agree to a few parts per million; a slope further off than this is a bad anchor.
constexpr double max_slope_error = 1e-4;  // 100 µs a second

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint64_t load(std::uint64_t& word) {
  return std::atomic_ref<std::uint64_t>{word}.load(std::memory_order_acquire);
}

void store(std::uint64_t& word, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>{word}.store(value, std::memory_order_release);
}

double slope_between(const clock_anchor& from, const clock_anchor& to) {
  const auto device_span = static_cast<std::int64_t>(to.device_ns - from.device_ns);
  const std::int64_t host_span = to.host_ns - from.host_ns;
  if (device_span <= 0) return 1.0;
  const double slope = static_cast<double>(host_span) / static_cast<double>(device_span);
  return std::clamp(slope, 1.0 - max_slope_error, 1.0 + max_slope_error);
}

std::int64_t along(const clock_segment& segment, std::uint64_t device_ns) {
  // Relative to the segment's start, so the double holds at most a few seconds' nanoseconds and
  // loses nothing, however far the epoch is.
  const auto offset = static_cast<std::int64_t>(device_ns - segment.device_ns);
  return segment.host_ns + static_cast<std::int64_t>(static_cast<double>(offset) * segment.slope);
}

// The rate is measured over at most this much of the past, so it follows a slowly changing drift.
constexpr std::int64_t rate_window_ns = 60'000'000'000;
constexpr std::size_t anchors_kept = 256;
constexpr std::size_t segments_kept = 100'000;  // a day and more at one a second

__global__ void clock_probe(clock_probe_mailbox* box, std::uint64_t budget_ns) {
  volatile clock_probe_mailbox* mail = box;
  const std::uint64_t began = cuda_global_timer();
  mail->started = 1;
  __threadfence_system();
  std::uint64_t answered = 0;
  for (;;) {
    const std::uint64_t request = mail->request;
    if (request == stop_request) return;
    if (request != answered) {
      mail->device_ns = cuda_global_timer();
      __threadfence_system();
      mail->answered = request;
      answered = request;
    } else if (cuda_global_timer() - began > budget_ns) {
      return;
    }
  }
}

}  // namespace

device_clock::device_clock(int device) : device_{device} {
  device_guard on{device_};
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
        device_);
  void* host = nullptr;
  const cudaError_t status = cudaHostAlloc(&host, sizeof(clock_probe_mailbox), cudaHostAllocMapped);
  if (status != cudaSuccess) {
    (void)cudaStreamDestroy(stream_);
    check(status, "cudaHostAlloc", device_);
  }
  mailbox_ = static_cast<clock_probe_mailbox*>(host);
  *mailbox_ = clock_probe_mailbox{};
  void* on_device = nullptr;
  check(cudaHostGetDevicePointer(&on_device, host, 0), "cudaHostGetDevicePointer", device_);
  mailbox_on_device_ = static_cast<clock_probe_mailbox*>(on_device);
  // Loaded now, while the caller creates deferred timing: under CUDA's lazy module loading the
  // probe's first launch would load it then, and a load can wait for kernels already running.
  cudaFuncAttributes attributes{};
  check(cudaFuncGetAttributes(&attributes, clock_probe), "cudaFuncGetAttributes", device_);
}

device_clock::~device_clock() {
  device_guard on{device_};
  if (mailbox_ != nullptr) store(mailbox_->request, stop_request);
  (void)cudaStreamSynchronize(stream_);
  (void)cudaStreamDestroy(stream_);
  (void)cudaFreeHost(mailbox_);
}

void device_clock::load_probe(int device) {
  device_guard on{device};
  cudaFuncAttributes attributes{};
  check(cudaFuncGetAttributes(&attributes, clock_probe), "cudaFuncGetAttributes", device,
        "launchwatch clock probe");
}

std::optional<clock_anchor> device_clock::probe(std::chrono::nanoseconds wait) {
  std::lock_guard lock{probe_mutex_};
  device_guard on{device_};
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (probe_in_flight_) {
    // The last probe was told to stop; until it has ended, the mailbox is its.
    const cudaError_t status = cudaStreamQuery(stream_);
    if (status == cudaSuccess) {
      probe_in_flight_ = false;
    } else if (status != cudaErrorNotReady) {
      check(status, "cudaStreamQuery", device_, "launchwatch clock probe");
    } else if (std::chrono::steady_clock::now() > deadline) {
      return std::nullopt;
    } else {
      std::this_thread::yield();
    }
  }
  *mailbox_ = clock_probe_mailbox{};
  std::atomic_thread_fence(std::memory_order_seq_cst);
  {
    // Launchwatch's own probe, not a program's kernel: the CUDA bridge skips it.
    launch_path::reported_here own;
    clock_probe<<<1, 1, 0, stream_>>>(mailbox_on_device_, probe_budget_ns);
  }
  check(cudaGetLastError(), "cudaLaunchKernel", device_, "launchwatch clock probe");
  probe_in_flight_ = true;

  while (load(mailbox_->started) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      store(mailbox_->request, stop_request);
      return std::nullopt;
    }
    const cudaError_t status = cudaStreamQuery(stream_);
    if (status != cudaErrorNotReady && load(mailbox_->started) == 0) {
      check(status, "cudaStreamQuery", device_, "launchwatch clock probe");
      return std::nullopt;  // ended without starting: cannot happen unless the device misbehaves
    }
    std::this_thread::yield();
  }

  std::optional<clock_anchor> best;
  for (std::uint64_t exchange = 1; exchange <= exchanges_per_anchor; ++exchange) {
    const std::int64_t sent = steady_now_ns();
    store(mailbox_->request, exchange);
    bool answered = true;
    while (load(mailbox_->answered) != exchange) {
      if (steady_now_ns() - sent > 5'000'000) {  // the probe ran out of budget: keep what we have
        answered = false;
        break;
      }
    }
    if (!answered) break;
    const std::int64_t received = steady_now_ns();
    const clock_anchor sample{load(mailbox_->device_ns), sent + (received - sent) / 2,
                              (received - sent) / 2};
    if (!best || sample.uncertainty_ns < best->uncertainty_ns) best = sample;
  }
  store(mailbox_->request, stop_request);
  return best;
}

bool device_clock::anchor(std::chrono::nanoseconds wait) {
  const std::optional<clock_anchor> taken = probe(wait);
  if (!taken) return false;
  std::lock_guard lock{mutex_};
  if (!anchors_.empty() && taken->device_ns <= anchors_.back().device_ns) return false;  // raced
  anchors_.push_back(*taken);
  if (segments_.empty()) {
    segments_.push_back(clock_segment{taken->device_ns, taken->host_ns, 1.0});
  } else {
    segments_.push_back(next_segment(anchors_, segments_.back()));
  }
  if (anchors_.size() > anchors_kept) anchors_.erase(anchors_.begin());
  if (segments_.size() > segments_kept) segments_.erase(segments_.begin());
  return true;
}

void device_clock::ensure_anchored() {
  {
    std::lock_guard lock{mutex_};
    if (!segments_.empty()) return;
  }
  while (!anchor(std::chrono::milliseconds{100})) {
    // The device is busy with other work; the probe runs once it frees a multiprocessor.
  }
}

std::vector<clock_anchor> device_clock::anchors() const {
  std::lock_guard lock{mutex_};
  return anchors_;
}

std::vector<clock_segment> device_clock::segments() const {
  std::lock_guard lock{mutex_};
  return segments_;
}

std::int64_t device_clock::map(const std::vector<clock_segment>& segments, std::uint64_t device_ns) {
  auto after = std::upper_bound(
      segments.begin(), segments.end(), device_ns,
      [](std::uint64_t ns, const clock_segment& s) { return ns < s.device_ns; });
  return along(after == segments.begin() ? segments.front() : *(after - 1), device_ns);
}

clock_segment device_clock::next_segment(const std::vector<clock_anchor>& anchors,
                                         const clock_segment& last) {
  const clock_anchor& now = anchors.back();
  const std::int64_t reached = along(last, now.device_ns);
  double rate = 1.0;
  for (std::size_t i = 0; i + 1 < anchors.size(); ++i) {
    const std::int64_t span = now.host_ns - anchors[i].host_ns;
    if (span > rate_window_ns) continue;
    if (span >= min_slope_span_ns) rate = slope_between(anchors[i], now);
    break;
  }
  const std::int64_t gap = now.host_ns - reached;
  if (gap > max_slew_gap.count() || gap < -max_slew_gap.count()) {
    return clock_segment{now.device_ns, now.host_ns, rate};
  }
  const double interval_ns =
      static_cast<double>(std::chrono::nanoseconds{reanchor_interval}.count());
  const double slope = std::clamp(rate + static_cast<double>(gap) / interval_ns,
                                  1.0 - max_slope_error, 1.0 + max_slope_error);
  return clock_segment{now.device_ns, reached, slope};
}

std::pair<std::int64_t, std::int64_t> device_clock::map_window(
    const std::vector<clock_segment>& segments, std::uint64_t start_ns, std::uint64_t end_ns) {
  auto after = std::upper_bound(
      segments.begin(), segments.end(), start_ns,
      [](std::uint64_t ns, const clock_segment& s) { return ns < s.device_ns; });
  const clock_segment& holding = after == segments.begin() ? segments.front() : *(after - 1);
  return {along(holding, start_ns), along(holding, std::max(start_ns, end_ns))};
}

profile_ticks device_clock::to_ticks(std::uint64_t start_ns, std::uint64_t end_ns) const {
  std::int64_t start = 0;
  std::int64_t end = 0;
  {
    std::lock_guard lock{mutex_};
    std::tie(start, end) = map_window(segments_, start_ns, end_ns);
  }
  const auto to = [](std::int64_t ns) { return instant{std::chrono::nanoseconds{ns}}; };
  return profile_ticks::from_start_end(to(start), to(end));
}

}  // namespace launchwatch::detail::cuda
