// What the injection and tests reach of the bridge alive in the process (the engine the live
// cuda_bridge objects share) without holding a cuda_bridge: closing its records at the end of
// `launchwatch run`, and the size of its graph bookkeeping. No CUDA header, so the injection
// includes it in every build.
#pragma once

#include "graph_replays.hpp"

namespace launchwatch::detail::cuda_bridge {

/// Waits for the devices the live bridge saw launches on, closes its record table (the collector
/// thread stops, one forced flush hands every record over) and gives up graph replays still
/// waiting; later reads of its measurements answer at once from what arrived. Nothing when no
/// bridge lives or in a build without one. Call after the observation was dropped (which forgets
/// the entries of launches caught between their ENTER and EXIT). Thread safety: any thread, not
/// inside an observer method, not while a bridge is being constructed or destroyed.
/// Closes without destroying the bridge: the program's other threads may still call CUDA while
/// exit runs, so CUPTI stays subscribed, but nothing of the bridge (its collector thread, its
/// flushes) runs through the process's teardown (review 2026-12-01b, finding 13).
void close_live_bridge_records() noexcept;

/// The live bridge's graph bookkeeping sizes (graph_replays::sizes), all 0 when none lives: for
/// GPU tests that it stays flat over many graphs.
graph_table_sizes live_bridge_graph_tables() noexcept;

}  // namespace launchwatch::detail::cuda_bridge
