// The end-of-run notes about launches counted without being reported or timed (run_notes.hpp).
#include "run_notes.hpp"

#include <chrono>
#include <cstdint>

#include <fmt/format.h>

namespace launchwatch::detail {

std::optional<std::string> capture_range_note(bool profiler_api_range,
                                              const cuda_bridge_stats& stats) {
  // A program that launched nothing has nothing to explain.
  if (!profiler_api_range || stats.launches_reported + stats.outside_capture_range == 0) {
    return std::nullopt;
  }
  if (stats.launches_reported == 0) {
    return fmt::format(
        "--capture-range cuda-profiler-api: no CUDA launch fell between cudaProfilerStart and "
        "cudaProfilerStop ({} outside them were counted only), so the report holds none; call "
        "cudaProfilerStart and cudaProfilerStop (torch.cuda.profiler.start() and stop()) around "
        "the part to watch, or run without --capture-range to watch every launch",
        stats.outside_capture_range);
  }
  return fmt::format(
      "--capture-range cuda-profiler-api: the report holds the {} CUDA launches between "
      "cudaProfilerStart and cudaProfilerStop; the {} outside them were counted, neither reported "
      "nor timed",
      stats.launches_reported, stats.outside_capture_range);
}

std::optional<std::string> timing_windows_note(const std::optional<cuda_timing_windows>& windows,
                                               const cuda_bridge_stats& stats) {
  if (!windows) return std::nullopt;
  const std::uint64_t untimed = stats.untimed_outside_windows + stats.untimed_records_elsewhere;
  const std::uint64_t timed =
      stats.launches_reported > untimed ? stats.launches_reported - untimed : 0;
  const double share =
      stats.launches_reported == 0
          ? 0.0
          : 100.0 * static_cast<double>(timed) / static_cast<double>(stats.launches_reported);
  return fmt::format(
      "timing windows of {} ms every {} ms ({} opened): device time for {} of {} CUDA launches "
      "({:.1f}%); the other {} are counted and attributed without it, and no time is scaled up "
      "for them",
      windows->on.count(), (windows->on + windows->off).count(), stats.timing_windows_opened, timed,
      stats.launches_reported, share, untimed);
}

std::optional<std::string> records_taken_note(const cuda_bridge_stats& stats) {
  if (stats.untimed_records_elsewhere == 0 && stats.records_taken_windows == 0) {
    return std::nullopt;
  }
  const auto seconds = std::chrono::duration<double>(stats.records_taken_for).count();
  return fmt::format(
      "timing is partial: another CUPTI client in the program held CUPTI's kernel records {} "
      "time(s), {:.1f} s in all; the {} CUDA launch(es) of those windows are counted and "
      "attributed, untimed",
      stats.records_taken_windows, seconds, stats.untimed_records_elsewhere);
}

}  // namespace launchwatch::detail
