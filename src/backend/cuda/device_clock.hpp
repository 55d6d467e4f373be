// Mapping a CUDA device's global timer onto the host's steady clock.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <launchwatch/profile.hpp>

namespace launchwatch::detail::cuda {

struct clock_probe_mailbox;

/// One reading of both clocks at (nearly) the same moment.
struct clock_anchor {
  /// The device's global timer, nanoseconds.
  std::uint64_t device_ns = 0;
  /// The host's steady clock, nanoseconds since its epoch, at the midpoint of the exchange.
  std::int64_t host_ns = 0;
  /// Half the exchange's round trip: the device's reading lies within this of `host_ns`.
  std::int64_t uncertainty_ns = 0;
};

/// One piece of the mapping: from `device_ns` on, host time is `host_ns + (t - device_ns) * slope`.
struct clock_segment {
  std::uint64_t device_ns = 0;
  std::int64_t host_ns = 0;
  double slope = 1.0;
};

/// Places device timestamps on the host's steady clock.
///
/// Kernels are stamped with the device's global timer (`%globaltimer`), which runs on its own epoch
/// and its own oscillator. A probe kernel reads it while the host reads its steady clock, over
/// pinned memory both can see; the exchange with the shortest round trip of a burst is kept as an
/// anchor.
///
/// The mapping is a chain of segments, like a clock disciplined by NTP: each new anchor starts a
/// segment where the previous one had got to (so the mapping never jumps) with a slope that is the
/// oscillators' measured rate plus whatever closes the gap to the new anchor over the next interval.
/// So the mapping is continuous and increasing (kernels that ran in order on the device stay in
/// order on the host, whenever each was read), a device time maps to the same instant however late
/// it is read, and its error stays the anchors' uncertainty plus one interval's drift however long
/// the run (the keeper in the CUDA backend anchors every `reanchor_interval` while launches are
/// timed). Arithmetic is on integer nanoseconds relative to a segment's start, never on a float
/// counted from a distant epoch.
///
/// Thread safety: every member may be called from any thread.
class device_clock {
 public:
  /// How often an active device is re-anchored, and the time over which a segment closes the gap.
  static constexpr std::chrono::milliseconds reanchor_interval{1000};
  /// A gap larger than this is closed by a step rather than by slewing (a first anchor's
  /// correction, or a clock that jumped).
  static constexpr std::chrono::nanoseconds max_slew_gap{std::chrono::milliseconds{1}};

  /// A clock for `device`; takes no anchor yet.
  explicit device_clock(int device);

  /// Loads the probe kernel onto `device` now. CUDA loads a kernel's module at its first use (lazy
  /// loading), which waits for the device and holds the context's lock meanwhile: a first anchor
  /// taken while a kernel holds every SM would stall every launch of the process, the keeper's
  /// thread notwithstanding. Called when the device is opened, before any such kernel runs.
  static void load_probe(int device);
  ~device_clock();
  device_clock(const device_clock&) = delete;
  device_clock& operator=(const device_clock&) = delete;

  /// Takes an anchor now and extends the mapping with it, waiting at most `wait` for the probe
  /// kernel to start (the device may be busy with other streams' work). Returns whether one was
  /// taken. Cost: a kernel launch and 16 host-device round trips over the bus (tens of µs).
  bool anchor(std::chrono::nanoseconds wait);

  /// Takes a first anchor if there is none, waiting for the device as long as it takes.
  void ensure_anchored();

  /// Maps a window, both ends through the segment that holds its start: a re-anchor that steps
  /// the mapping inside the window moves the window, never changes its length.
  /// Precondition: ensure_anchored() was called.
  profile_ticks to_ticks(std::uint64_t start_ns, std::uint64_t end_ns) const;

  /// The anchors and segments so far, oldest first (for the measurement harness and tests).
  std::vector<clock_anchor> anchors() const;
  std::vector<clock_segment> segments() const;

  /// Maps `device_ns` through `segments` (oldest first, at least one): the last segment starting at
  /// or before it, or the first one extrapolated back. Pure, for tests.
  static std::int64_t map(const std::vector<clock_segment>& segments, std::uint64_t device_ns);

  /// Maps a window through `segments` (oldest first, at least one), both ends through the segment
  /// that holds `start_ns`. Pure, for tests.
  static std::pair<std::int64_t, std::int64_t> map_window(const std::vector<clock_segment>& segments,
                                                          std::uint64_t start_ns,
                                                          std::uint64_t end_ns);

  /// The segment a new anchor starts, given the anchors so far (oldest first, the new one last, at
  /// least two) and the current last segment. Pure, for tests.
  static clock_segment next_segment(const std::vector<clock_anchor>& anchors,
                                    const clock_segment& last);

 private:
  std::optional<clock_anchor> probe(std::chrono::nanoseconds wait);

  int device_;
  mutable std::mutex mutex_;
  std::vector<clock_anchor> anchors_;
  std::vector<clock_segment> segments_;

  std::mutex probe_mutex_;  // one probe at a time: they share the mailbox
  cudaStream_t stream_ = nullptr;
  clock_probe_mailbox* mailbox_ = nullptr;  // pinned, mapped
  clock_probe_mailbox* mailbox_on_device_ = nullptr;
  bool probe_in_flight_ = false;
};

}  // namespace launchwatch::detail::cuda
