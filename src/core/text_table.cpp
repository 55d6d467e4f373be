// The rules every launchwatch table is drawn by: times in three significant figures, rounding,
// largest-remainder shares, column layout (text_table.hpp).

#include "core/interface/text_table.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <numeric>

#include <fmt/format.h>

namespace launchwatch::detail {
namespace {

// GCC and Clang both have it; -Wpedantic wants it marked as an extension.
__extension__ typedef __int128 wide;

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

}  // namespace

std::string format_time(std::chrono::nanoseconds time) {
  // The finest unit and number of decimals whose rounded value has at most three digits before
  // the last unit (ns) or at most three digits in all: 1.23, 12.3, 123. Tried from the finest, so
  // the first that fits shows three figures (a value that rounds up to 1000 moves on: 999.6 us is
  // 1.00 ms).
  struct format {
    std::string_view unit;
    std::int64_t scale;  // nanoseconds in one last digit
    int decimals;
  };
  static constexpr format formats[] = {
      {"ns", 1, 0},           {"us", 10, 2},          {"us", 100, 1},         {"us", 1'000, 0},
      {"ms", 10'000, 2},      {"ms", 100'000, 1},     {"ms", 1'000'000, 0},   {"s", 10'000'000, 2},
      {"s", 100'000'000, 1},  {"s", 1'000'000'000, 0},
  };
  const bool negative = time.count() < 0;
  const auto magnitude = negative ? 0 - static_cast<std::uint64_t>(time.count()) : static_cast<std::uint64_t>(time.count());
  for (const auto& f : formats) {
    const auto scale = static_cast<std::uint64_t>(f.scale);
    const auto digits = magnitude / scale + (magnitude % scale >= (scale + 1) / 2 ? std::uint64_t{1} : std::uint64_t{0});
    if (digits >= 1000 && &f != &formats[std::size(formats) - 1]) continue;
    const char* sign = negative && digits > 0 ? "-" : "";
    if (f.decimals == 0) return fmt::format("{}{} {}", sign, digits, f.unit);
    const auto divisor = f.decimals == 2 ? 100u : 10u;
    return fmt::format("{}{}.{:0{}} {}", sign, digits / divisor, digits % divisor, f.decimals, f.unit);
  }
  return {};  // not reached: the last format takes any value
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
