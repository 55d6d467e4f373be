// The shared table rules: units, rounding, largest-remainder shares, column layout.

#include "report_table.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include <fmt/format.h>

namespace launchwatch::detail {
namespace {

// GCC and Clang both have it; -Wpedantic wants it marked as an extension.
__extension__ typedef __int128 wide;

/// `n / d` rounded to nearest, half away from zero. Precondition: d > 0.
std::int64_t round_div(std::int64_t n, std::int64_t d) {
  const wide q = (static_cast<wide>(n < 0 ? -static_cast<wide>(n) : n) + d / 2) / d;
  return static_cast<std::int64_t>(n < 0 ? -q : q);
}

/// `n / d` rounded down, and what is left (0 <= r < d). Precondition: d > 0.
std::pair<wide, wide> floor_div(wide n, wide d) {
  wide q = n / d;
  wide r = n % d;
  if (r < 0) {
    --q;
    r += d;
  }
  return {q, r};
}

/// `value` thousandths as `1.234`, `-0.004`.
std::string thousandths_text(std::int64_t value) {
  const bool negative = value < 0;
  const auto magnitude = negative ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  return fmt::format("{}{}.{:03}", negative ? "-" : "", magnitude / 1000, magnitude % 1000);
}

}  // namespace

time_unit unit_for(std::chrono::nanoseconds whole) {
  const auto ns = whole.count() < 0 ? -whole.count() : whole.count();
  if (ns < 10'000) return {"ns", 1, 0};
  if (ns < 10'000'000) return {"us", 1'000, 3};
  if (ns < 100'000'000'000) return {"ms", 1'000'000, 3};
  return {"s", 1'000'000'000, 3};
}

std::string format_time(std::chrono::nanoseconds time, const time_unit& unit) {
  if (unit.decimals == 0) return fmt::format("{} {}", round_div(time.count(), unit.ns), unit.name);
  return fmt::format("{} {}", thousandths_text(round_div(time.count(), unit.ns / 1000)), unit.name);
}

std::string format_share(std::int64_t tenths) {
  const bool negative = tenths < 0;
  const auto magnitude = negative ? 0 - static_cast<std::uint64_t>(tenths) : static_cast<std::uint64_t>(tenths);
  return fmt::format("{}{}.{}%", negative ? "-" : "", magnitude / 10, magnitude % 10);
}

std::vector<std::int64_t> apportion(const std::vector<std::int64_t>& parts, std::int64_t units) {
  std::vector<std::int64_t> shares(parts.size(), 0);
  const wide sum = std::accumulate(parts.begin(), parts.end(), wide{0},
                                   [](wide total, std::int64_t part) { return total + part; });
  if (sum <= 0) return shares;
  std::vector<std::pair<wide, std::size_t>> remainders;
  remainders.reserve(parts.size());
  wide given = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto [floor, rest] = floor_div(static_cast<wide>(parts[i]) * units, sum);
    shares[i] = static_cast<std::int64_t>(floor);
    given += floor;
    remainders.emplace_back(rest, i);
  }
  // The parts add up to `sum`, so the floors fall short of `units` by less than one per part.
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; given < units && k < remainders.size(); ++k, ++given) {
    ++shares[remainders[k].second];
  }
  return shares;
}

std::vector<std::string> lay_out_table(const std::vector<std::vector<std::string>>& rows,
                                       const std::vector<column_align>& align) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::vector<std::string> lines;
  lines.reserve(rows.size());
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      const bool left = c == 0 || (c < align.size() && align[c] == column_align::left);
      line += left ? fmt::format("{:<{}}", row[c], widths[c]) : fmt::format("{:>{}}", row[c], widths[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace launchwatch::detail
