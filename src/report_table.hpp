// The one table renderer behind every launchwatch table: the attribution tree and the profiling
// logger's summary. Both tables show times and shares of a 100% row, so both follow one set of
// rules, kept here: one time unit per table, integer rounding, shares that add up to their 100%
// row exactly, the same column layout.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace launchwatch::detail {

/// The unit every time in one table is written in.
///
/// One unit for the whole table, not one per cell, so decimal points line up and rows compare by
/// eye. Chosen from the table's 100% so that it reads at least 10 of the unit: three decimals then
/// resolve a ten-thousandth of the whole, or better.
struct time_unit {
  std::string_view name;  ///< "ns", "us", "ms" or "s"
  std::int64_t ns = 1;    ///< nanoseconds in one unit
  int decimals = 0;       ///< 0 for ns (whole nanoseconds), 3 otherwise
};

/// The unit for a table whose 100% row is `whole`. Cost: none worth stating.
time_unit unit_for(std::chrono::nanoseconds whole);

/// `1020.000 us`, `-4.000 us`, `850 ns`: `time` in `unit`, rounded to the nearest last digit (half
/// away from zero). Integer arithmetic throughout, so a golden file reads the same on every machine.
std::string format_time(std::chrono::nanoseconds time, const time_unit& unit);

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
