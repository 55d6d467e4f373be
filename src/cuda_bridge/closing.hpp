// Closing the live bridge's records at the end of `launchwatch run`, without destroying it: the
// program's other threads may still call CUDA while exit runs, so CUPTI stays subscribed, but
// nothing of the bridge (its collector thread, its flushes) runs through the process's teardown
// (review 2026-12-01b, finding 13). No CUDA header, so the injection includes it in every build.
#pragma once

namespace launchwatch::detail::cuda_bridge {

/// Waits for the devices the live bridge saw launches on, closes its record table (the collector
/// thread stops, one forced flush hands every record over) and gives up graph replays still
/// waiting; later reads of its measurements answer at once from what arrived. Nothing when no
/// bridge lives or in a build without one. Call after the observation was dropped (which forgets
/// the entries of launches caught between their ENTER and EXIT). Thread safety: any thread, not
/// inside an observer method, not while a bridge is being constructed or destroyed.
void close_live_bridge_records() noexcept;

}  // namespace launchwatch::detail::cuda_bridge
