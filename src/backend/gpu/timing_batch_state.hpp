// When a GPU timing batch may be closed: its open/close protocol, free of CUDA and HIP so that
// every order of a stream's launches and another thread's read is tested on the CPU.
#pragma once

#include <cstdint>
#include <optional>

namespace launchwatch::detail::gpu {

/// The state of one timing batch (timing_slots.hpp): which slots are taken, which of their
/// launches are between their slot and their kernel, and whether a reader is waiting for it.
///
/// Closing a batch records its beacon on the stream; a beacon recorded while a launch holds a slot
/// of the batch but has not submitted its kernel would land before that kernel, so the batch would
/// be read back without it and its slot given to another batch while the kernel still stamps it
/// (review-2026-12-01b finding 4). So a read on another thread closes a batch only when no launch
/// is in that gap; otherwise it only flags the batch, and the launch in the gap closes it once its
/// kernel is submitted: the stream's next submission, as the issue asks.
///
/// Thread safety: none of its own; the batch's lock guards it.
struct timing_batch_state {
  /// Launches may still take slots.
  bool open = true;
  /// Slots taken.
  std::uint32_t used = 0;
  /// Launches that took a slot and have not said their kernel was submitted (or failed).
  std::uint32_t launching = 0;
  /// A reader waits for the batch: the last launch in the gap closes it.
  bool close_requested = false;

  /// Takes the next slot for a launch, or nothing when the batch is closed or full.
  std::optional<std::uint32_t> take(std::uint32_t capacity) noexcept {
    if (!open || used >= capacity) return std::nullopt;
    ++launching;
    return used++;
  }

  /// A launch that took a slot submitted its kernel (or failed to). True when the batch must be
  /// closed now: a reader asked, and this was the last launch in the gap.
  bool launched() noexcept {
    if (launching > 0) --launching;
    return open && close_requested && launching == 0;
  }

  /// A reader needs the batch read back. True when the reader may close it now (no launch is in
  /// the gap); otherwise the batch is flagged, and launched() says when to close it.
  bool request_close() noexcept {
    if (!open) return false;
    if (launching == 0) return true;
    close_requested = true;
    return false;
  }

  /// Closes the batch. True when it was open: the caller then records its beacon. For the stream's
  /// own closes (full, a capture, the stream going), made with no launch of it in the gap.
  bool close() noexcept {
    if (!open) return false;
    open = false;
    close_requested = false;
    return true;
  }
};

}  // namespace launchwatch::detail::gpu
