// Core's interface: the rules every launchwatch table is drawn by, the reports' tables (src/report/)
// and the profiling logger's summary alike. Both show times and shares of a 100% row, so both
// follow one set of rules, kept here: times in three significant figures, integer rounding, shares
// that add up to their 100% row exactly, the same column layout.
//
// Why in core: the logger (core) draws its summary with these rules, and core must not depend on
// the reports. What only reports write (CSV lines, path and launch cells) is src/report/'s own
// (report_cells.hpp).
//
// Thread safety: every function is pure (no shared state): safe from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace launchwatch::detail {

/// `412 us`, `1.23 ms`, `12.3 s`, `850 ns`, `-4.00 us`: `time` in the unit that shows it with at
/// least three significant figures (whole nanoseconds below 1 us; three figures from 1 us on; whole
/// seconds from 1000 s on), rounded to the nearest last digit (half away from zero).
///
/// Each cell picks its own unit, so a table over a long window still shows its small rows (a
/// 412 us row of a 100 s run is `412 us`, not `0.000 s`); right-aligned columns keep the units
/// lined up. Integer arithmetic throughout, so a golden file reads the same on every machine.
std::string format_time(std::chrono::nanoseconds time);

/// A share is counted in tenths of a percent: `whole_share` is 100.0%.
inline constexpr std::int64_t whole_share = 1000;

/// `36.3%`, `-0.4%`, `100.0%`: a share counted in tenths of a percent.
std::string format_share(std::int64_t tenths);

/// Splits `units` among `parts` in proportion to them, by largest remainder: each part gets the
/// floor of its exact share, and the units left over go one each to the parts with the largest
/// remainders (the earlier part first when two tie). The results add up to exactly `units`, so rows
/// shown with their shares add up to the row they are shares of, which rounding each share on its
/// own does not promise (33.3% three times is 99.9%).
///
/// Parts may be negative (a row subtracted, such as overlap). Precondition: the parts' sum is not
/// negative; when it is zero every part gets 0. Exact for any int64 parts (128-bit intermediates).
std::vector<std::int64_t> apportion(const std::vector<std::int64_t>& parts, std::int64_t units);

/// How a column's cells are aligned.
enum class column_align : bool { left, right };

/// Lays out a table: one line per row, the heading row first, cells two spaces apart, each column
/// as wide as its widest cell, trailing spaces removed. Column 0 is always left-aligned (it holds
/// names, indented to show nesting); the others as `align` says (right when not given).
///
/// Precondition: no row has more cells than `align` has entries, when `align` is given.
std::vector<std::string> lay_out_table(const std::vector<std::vector<std::string>>& rows,
                                       const std::vector<column_align>& align = {});

}  // namespace launchwatch::detail
