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

/// Another CUPTI client in the process is about to take CUPTI's kernel records: CUPTI hands every
/// record to the last client that registered activity buffers. The live bridge waits for the
/// devices it saw (outside stream
/// captures), delivers what is pending, and from then on reports launches untimed (counted and
/// attributed, names only) instead of awaiting records that would go to the other client. Returns
/// whether a bridge lives. Thread safety: any thread, not inside an observer method.
bool lend_live_bridge_records() noexcept;

/// The other client released CUPTI's kernel records (it turned its activity kinds off and
/// flushed its buffers): the live bridge registers its callbacks again and times launches again.
/// Returns whether a bridge lives and took them back. Call only once the other client is done,
/// or its trace loses its records from then on. Thread safety: as lend_live_bridge_records.
bool take_live_bridge_records_back() noexcept;

/// The live bridge's graph bookkeeping sizes (graph_replays::sizes), all 0 when none lives: for
/// GPU tests that it stays flat over many graphs.
graph_table_sizes live_bridge_graph_tables() noexcept;

}  // namespace launchwatch::detail::cuda_bridge
