// An aggregate-only attribution's fold: a thread's launches totalled per (scope path, kernel,
// stream) and placed on the timeline. A launching thread hands its launches over every
// fold_every; the fold thread (fold_thread.hpp) folds them, or the launching thread itself when
// none can, and a collect folds what is left.
#pragma once

#include <launchwatch/attribute/attribution.hpp>

#include <optional>
#include <string>

#include "recorder.hpp"

namespace launchwatch::detail {

/// Reads `entry`'s measurement, kept or told, counting what could not be read in `lost` (the first
/// failure's message in `first_failure`). Blocks until the device has passed the kernel.
std::optional<launch_timing> read_measurement(launch_entry& entry, lost_measurements& lost,
                                              std::string& first_failure);

/// What a launching thread does after handing its launches over (hand_over).
enum class after_hand_over {
  nothing,    ///< They wait for the fold thread, already asked.
  queue,      ///< Ask the fold thread (fold_thread::queue), outside the log's lock.
  fold_here,  ///< The backlog is full (fold_backlog): fold them on this thread (fold_handed).
};

/// Moves `log`'s launches to its handed-over list, to be folded. Called by the launching thread,
/// holding `log.mutex`, when `fold_every` launches have gathered; the launch it is reporting is
/// not among them (it is recorded after). Cost: a few pointer moves and a walk of 16 chunks.
[[nodiscard]] after_hand_over hand_over(thread_log& log) noexcept;

/// Folds `chunks` (launches taken from `log`, oldest first) into `log`'s totals, its trace prefix
/// and `r`'s timeline, reading their measurements, and gives the chunks back to the pool. The
/// caller holds `log.fold_mutex`, not `log.mutex`. May throw std::bad_alloc; the chunks go back
/// however it ends.
void fold_chunks(recorder& r, thread_log& log, chunk<launch_entry>* chunks);

/// Folds what `log` has handed over: takes `log.fold_mutex`, then `log.mutex` only to take the
/// handed-over chunks. What the fold thread runs, and a launching thread whose backlog is full.
void fold_handed(recorder& r, thread_log& log);

/// Has `log`'s handed-over launches folded: by the fold thread, or here when it cannot take them.
/// Called by the launching thread after hand_over, outside `log.mutex`.
void finish_hand_over(recorder& r, thread_log& log, after_hand_over next);

}  // namespace launchwatch::detail
