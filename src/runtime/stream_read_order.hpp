// One stream's device windows, placed on the host clock when they are read, never overlapping when
// read in stream order. Shared by the backends that map device time at read time (the GPU
// backends' deferred timing, Vulkan's shader clock and timestamp queries).
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>

#include <launchwatch/profile.hpp>

namespace launchwatch::detail {

/// Where the window of a stream read last in stream order ended, as it was handed out.
///
/// A device window is mapped onto the host clock when it is read, through the clock's anchors
/// known then, and is moved (never shortened) to start at its launch's submission when the
/// mapping's error places it earlier. Either can place a kernel before the end of the kernel that
/// ran before it on its stream, as that window was handed out (through an older anchor, or moved
/// to its own submission); one stream's kernels run one after another, so a window read after an
/// earlier one of its stream is moved to start no earlier than that one's end.
///
/// Thread safety: none; the owner's lock guards it.
struct stream_read_order {
  /// The latest position (in the stream's issue order, from 1) read so far; 0 before any.
  std::uint64_t position = 0;
  /// Where that window ended, as handed out.
  instant end{};
};

/// `window`, the window of the launch at `position` in its stream's issue order (increasing, from
/// 1), moved whole to start no earlier than `earliest` (its submission) nor, when an earlier
/// launch of the stream was read last, than where that window ended; `order` then holds it. A
/// window read after a later one of its stream is placed by `earliest` alone and leaves `order` as
/// it was.
inline profile_ticks place_in_stream_order(stream_read_order& order, std::uint64_t position,
                                           profile_ticks window, instant earliest) {
  const bool after_last = order.position < position;
  if (after_last && order.position != 0) earliest = std::max(earliest, order.end);
  if (window.start() < earliest) {
    window = profile_ticks::from_start_end(earliest, earliest + window.length());
  }
  if (after_last) order = stream_read_order{position, window.end()};
  return window;
}

/// A stream's read order with its own lock, for measurements read on any thread: the stream owns
/// it (and, on the GPU backends, shares it with its timing batches, which its measurements may
/// outlive the stream in).
class stream_reads {
 public:
  /// place_in_stream_order under the lock. Cost: a lock.
  profile_ticks place(std::uint64_t position, profile_ticks window, instant earliest) {
    std::lock_guard lock{mutex_};
    return place_in_stream_order(order_, position, window, earliest);
  }

 private:
  std::mutex mutex_;
  stream_read_order order_;  // guarded by mutex_
};

}  // namespace launchwatch::detail
