// What `launchwatch run` says at the program's end about the CUDA launches it counted without
// reporting or timing them (the capture range, timing windows, another CUPTI client): a sentence
// each, composed apart from the session so that each is checked against the bridge's counts.
#pragma once

#include <optional>
#include <string>

#include <launchwatch/cuda_bridge.hpp>

namespace launchwatch::detail {

/// Under `--capture-range cuda-profiler-api`: how many launches fell between cudaProfilerStart and
/// cudaProfilerStop (the report's) and how many outside (counted only). When none fell inside, says
/// that the report is empty for that reason, and what to do. Nothing without the range, or when
/// the program launched nothing.
/// Thread safety: a pure function.
std::optional<std::string> capture_range_note(bool profiler_api_range,
                                              const cuda_bridge_stats& stats);

/// Under `--timing windows:ON/OFF`: which share of the reported launches carries device time, and
/// that nothing is scaled up for the rest. Nothing without windows.
/// Thread safety: a pure function.
std::optional<std::string> timing_windows_note(const std::optional<cuda_timing_windows>& windows,
                                               const cuda_bridge_stats& stats);

/// When another CUPTI client of the program held CUPTI's kernel records for a while: that the
/// report's times are partial, and how many launches went untimed. Nothing otherwise.
/// Thread safety: a pure function.
std::optional<std::string> records_taken_note(const cuda_bridge_stats& stats);

}  // namespace launchwatch::detail
