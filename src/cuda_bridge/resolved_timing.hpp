// `resolved` timing of a foreign launch: two CUDA events on the launch's stream, recorded at its
// ENTER and EXIT and read at once (research/cuda-bridge.md §6: 11-13 µs a launch, against 365 µs
// for waiting on its CUPTI record).
//
// A thread keeps one pair of events per context it launched in (events belong to a context), made
// at its first resolved launch there and reused by every later one, since a resolved measurement
// is read before the launch returns. The pairs are destroyed when the thread ends or when the
// bridge does (release_resolved_windows), whichever comes first; a thread that alternates devices
// reuses its pairs rather than making new ones (review 2026-12-01b, finding 8).
#pragma once

#include <cstdint>
#include <optional>

#include <launchwatch/profile.hpp>

namespace launchwatch::detail::cuda_bridge {

/// Records this thread's start event of `context` on `stream` (making the thread's pair there
/// first if it has none). Returns false when CUDA could not. On the issuing thread, before
/// submission, with `context` current. Cost: a scan of the thread's pairs (one per context).
bool open_resolved_window(void* context, void* stream) noexcept;

/// Records the end event of the pair open_resolved_window used on `stream` and returns the
/// measurement that reads the pair, or nothing when CUDA could not. On the issuing thread, after
/// open_resolved_window; the pair is reused by the thread's next launch in that context, so the
/// measurement must be read before then (resolved is).
std::optional<profile_duration> close_resolved_window(void* stream);

/// Destroys every thread's pairs: at the bridge's end, once no launch callback runs and the
/// devices are idle. Threads that launch later make new ones.
void release_resolved_windows() noexcept;

/// Event pairs made and destroyed so far in the process (for tests that they do not leak).
struct resolved_event_counts {
  std::uint64_t pairs_created = 0;
  std::uint64_t pairs_destroyed = 0;
};
resolved_event_counts resolved_events() noexcept;

}  // namespace launchwatch::detail::cuda_bridge
