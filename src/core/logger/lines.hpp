// What the profiling logger writes: its per-launch lines and its summary tables, from plain values.
//
// Presentation only: nothing here touches the queue, the writer thread or an output, so a line or a
// table can be checked against exact text.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <launchwatch/logger.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>

namespace launchwatch::detail {

/// `1.500 ms`: three decimals of the largest unit that keeps the integer part nonzero, rounded to
/// nearest. Integer arithmetic throughout, so a golden file reads the same on every machine.
std::string format_duration(std::chrono::nanoseconds length);

/// `+1.000000 ms`: a signed offset from the logger's start with nanosecond precision, so launches on
/// several streams can be lined up from their lines.
std::string format_offset(std::chrono::nanoseconds offset);

/// The `execution_only` line of a launch: its balanced name and where it ran.
std::string execution_line(const launch_info& info);

/// What became of a launch's measurement once the writer read it.
struct reading_outcome {
  std::optional<profile_ticks> ticks;
  timing_method method = timing_method::system;
  std::string failure;  // why a read threw; empty otherwise
};

/// The line of a timed launch at `level` (`medium` or `full`); `origin` is the logger's start.
std::string timed_line(const launch_info& info, profile_level level, const reading_outcome& outcome,
                       instant origin);

/// One kernel's totals over the launches since the previous summary, for one timing method.
struct totals {
  std::chrono::nanoseconds time{0};
  std::uint64_t count = 0;
};

/// What the writer keeps between summaries, keyed by full kernel name: the name shown is chosen when
/// the summary is written, by the level in force then.
struct running_totals {
  std::array<std::map<std::string, totals, std::less<>>, 2> timed;  // indexed by timing_method
  std::map<std::string, std::uint64_t, std::less<>> untimed;

  void add(std::string_view kernel, const reading_outcome& outcome);
  bool empty() const;
  /// The summary's lines: the device table, then the system table, then the untimed launches; each
  /// only when it has rows.
  std::vector<std::string> render(profile_level level) const;
};

}  // namespace launchwatch::detail
