// What the CUDA bridge needs from the launch path beyond launch_path.hpp's public hooks, gathered
// in one place: the current observation, delivering a replayed graph node to it, whether this
// thread is inside an observer, a listener for the watch state, and whether launchwatch's own CUDA backend
// reports the launch being made on this thread.
//
// Today these reach into private core headers (observation_slot.hpp, launch_watch_writer.hpp) and
// the CUDA backend's own_submit.hpp, all in launch_path_access.cpp and nowhere else in the bridge;
// once the launch path offers them publicly (issue 21: current_observation, deliver_replayed,
// inside_observer, on_watched_change, reported_here_now), only that file changes.
//
// No CUDA header, so the bridge's CUPTI-free core (bridge_core.hpp) builds and is tested anywhere.
#pragma once

#include <cstdint>

#include <launchwatch/observe.hpp>

namespace launchwatch::detail::cuda_bridge {

/// The serial of the observation installed right now, 0 when none is. Serials are never reused, so
/// an event that keeps one can tell later whether that same observation is still installed.
/// Cost: a shared lock of the observer slot. Any thread.
[[nodiscard]] std::uint64_t current_observation() noexcept;

/// Tells `node` to the observation `observation` if it is still the installed one and its observer
/// derives from graph_replay_observer (behaviour 6 for a measurement that arrives after the fact);
/// an observer's exception is contained. Returns whether it was told.
/// Cost: a shared lock of the observer slot and a dynamic_cast. Any thread, outside observers.
bool deliver_replayed(std::uint64_t observation, const replayed_node& node);

/// Whether this thread is inside an observer method right now (an observer that launches).
/// Cost: a thread-local read.
[[nodiscard]] bool inside_observer() noexcept;

/// Aborts saying `what` was attempted from inside an observer method, when this thread is inside
/// one and the build checks reentry (LAUNCHWATCH_CHECK_REENTRY); else nothing.
void forbid_inside_observer(const char* what);

/// Installs `listener` (or none, with nullptr) as the one listener told after
/// launch_path::watched() changed its answer; the listener reads watched() itself.
void on_watched_change(void (*listener)() noexcept) noexcept;

/// Whether launchwatch's own CUDA backend is submitting a launch on this thread right now: it
/// reported the launch through the launch path itself, so the bridge, which sees it too, skips it.
/// Cost: a thread-local read.
[[nodiscard]] bool reported_by_own_backend() noexcept;

}  // namespace launchwatch::detail::cuda_bridge
