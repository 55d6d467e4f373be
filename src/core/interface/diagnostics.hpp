// Core's interface: launchwatch's own diagnostics, the `launchwatch` spdlog logger and the warnings
// said once per process. Every layer and backend warns through it, so an application routes all of
// launchwatch's diagnostics by registering one logger, and a warning that would repeat on every
// launch is said once.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>

#include <spdlog/logger.h>

namespace launchwatch::detail {

/// The logger every launchwatch warning goes through, registered with spdlog as `launchwatch`.
///
/// Created on first use with a stderr sink unless the program registered its own logger under that
/// name first, so an application can route launchwatch's diagnostics wherever its own go.
/// Thread safety: safe from any thread.
spdlog::logger& diagnostics();

/// The warnings a process says at most once: each is a configuration mistake or a contained fault
/// that would repeat on every launch, where one line per kernel would bury the log.
enum class once_warning : std::size_t {
  observer_threw,
  logger_takes_deferred_measurements,
  timing_dropped_by_observer_asking_none,
  profile_refused,
  grid_overhead_unmeasured,
  collective_read_refused,
  cupti_record_missing,
  capture_waited_past_synchronisation,
  cupti_records_taken,
  vulkan_timing_slots_spent,
  count_,
};

/// True the first time it is asked about `warning` in this process, false after. Thread safety:
/// any thread; exactly one caller gets true. Cost: one relaxed load after the first time (a refused
/// launch asks on every launch).
bool first_time(once_warning warning) noexcept;

/// Forgets which once-per-process warnings were said, so a test can see one said again.
void reset_once_warnings_for_testing() noexcept;

}  // namespace launchwatch::detail
