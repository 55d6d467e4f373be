// `resolved` timing of a foreign launch: two CUDA events on the launch's stream, recorded at its
// ENTER and EXIT and read at once (research/cuda-bridge.md §6: 11-13 µs a launch, against 365 µs
// for waiting on its CUPTI record).
#pragma once

#include <optional>

#include <launchwatch/profile.hpp>

namespace launchwatch::detail::cuda_bridge {

/// Records this thread's start event on `stream` (making the thread's pair in `context` first if
/// it has none there). Returns false when CUDA could not. On the issuing thread, before submission.
bool open_resolved_window(void* context, void* stream) noexcept;

/// Records this thread's end event on `stream` and returns the measurement that reads the pair, or
/// nothing when CUDA could not. On the issuing thread, after open_resolved_window; the pair is
/// reused by the thread's next launch, so the measurement must be read before then (resolved is).
std::optional<profile_duration> close_resolved_window(void* stream);

}  // namespace launchwatch::detail::cuda_bridge
