// What one run of the peers harness measured, as plain data: the harness fills it, the renderers
// (a table on stdout, a JSON file) read it. No CUDA or CUPTI type appears here, so the renderers
// and their tests compile without the toolkit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "analysis.hpp"

namespace launchwatch::peers {

/// Who a case belongs to: the baseline, launchwatch, or what a user would pick instead.
enum class side { raw, launchwatch, peer };

/// One way of issuing empty kernels, measured over every round.
struct launch_cost_case {
  std::string name;   ///< Short id, stable across runs (JSON key, plot label).
  std::string label;  ///< What a reader sees in the table.
  side owner = side::raw;
  /// Which interleaved set it ran in: "clean" (a process CUPTI has not touched yet) or "cupti"
  /// (the CUPTI cases, each detached with cuptiFinalize after its batch, with raw launches and
  /// launchwatch again beside them).
  std::string phase = "clean";
  /// The case its ratios are taken against, round by round: the raw case of its phase.
  std::string baseline = "raw";
  /// Per round, nanoseconds per launch: returning from the issuing call N times.
  std::vector<double> issue_ns;
  /// Per round, nanoseconds per launch: the synchronize and whatever the method does with its
  /// measurements once the batch is over (resolving deferred timings, flushing CUPTI's buffers).
  std::vector<double> drain_ns;
  /// Per round, issue plus drain.
  std::vector<double> total_ns;
  /// What each batch was expected to deliver (names, records, timings) and what it did, summed.
  std::uint64_t expected = 0;
  std::uint64_t delivered = 0;
  /// Why it did not run, when it did not (empty otherwise).
  std::string skipped;
};

/// Back-to-back kernels of one length under one way of timing.
struct perturbation_case {
  std::string name;
  std::string label;
  side owner = side::raw;
  /// The untimed case this one is compared with ("raw" or "launchwatch idle"), by name.
  std::string untimed;
  double kernel_target_ns = 0;
  std::size_t kernels_per_pass = 0;
  /// Per round, the pass's wall time divided by its kernel count, nanoseconds.
  std::vector<double> per_kernel_ns;
  std::string skipped;
};

/// One way of timing, compared kernel by kernel with CUPTI's activity records of the same kernels.
struct fidelity_case {
  std::string kernel;  ///< "empty", "5us", "50us".
  std::string regime;  ///< "launch-bound" or "device-bound".
  std::string method;  ///< "launchwatch deferred", "CUDA events".
  agreement durations;
  /// Device idle time over the same passes, as each side's timestamps give it.
  idle_summary method_idle;
  idle_summary cupti_idle;
  std::size_t passes = 0;
  std::string skipped;
};

/// The target a spin kernel was given and what it took back to back once calibrated.
struct calibration {
  double target_ns = 0;
  double spin_ns = 0;             ///< What the kernel was told to spin for.
  double measured_period_ns = 0;  ///< Back-to-back period measured with events over a pass.
};

/// A check of the harness's own isolation: raw launches in the clean phase (CUPTI never called),
/// against raw launches in the CUPTI phase, first in each round and right after the CUPTI cases.
/// Equal medians mean the CUPTI cases left nothing behind that slows the others.
struct isolation_check {
  spread raw_before_cupti_ns;
  spread raw_interleaved_ns;
  spread raw_right_after_cupti_ns;
};

/// What timing does to a kernel's own length on the device, as CUPTI sees it: the same kernel body
/// launched raw, through launchwatch untimed, and through launchwatch with deferred timing.
struct instrumentation_cost {
  std::string kernel;
  double raw_ns = std::numeric_limits<double>::quiet_NaN();
  double launchwatch_untimed_ns = std::numeric_limits<double>::quiet_NaN();
  double launchwatch_timed_ns = std::numeric_limits<double>::quiet_NaN();
};

/// Everything one run measured.
struct run_results {
  std::string device_name;
  std::string driver_version;
  std::string runtime_version;
  std::string cupti_version;
  int multiprocessors = 0;
  std::string started_at;  ///< UTC, ISO 8601.
  int rounds = 0;
  std::size_t launches_per_batch = 0;
  std::string notes;  ///< What was left out and why (no runtime, no attribution observer...).
  double seconds = 0;

  std::vector<launch_cost_case> launch_cost;
  isolation_check isolation;
  std::vector<calibration> calibrations;
  std::vector<perturbation_case> perturbation;
  std::vector<fidelity_case> fidelity;
  std::vector<instrumentation_cost> instrumentation;
};

/// Renders the run as the tables docs/benchmarks.md shows, for a terminal.
std::string render_tables(const run_results& results);

/// Renders the run as JSON (the plot script and regression checks read it).
std::string render_json(const run_results& results);

}  // namespace launchwatch::peers
