// The profiling logger's lines and summary tables: plain values in, text out.

#include "core/logger/lines.hpp"
#include "core/interface/text_table.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include <launchwatch/kernel_name.hpp>

namespace launchwatch::detail {
namespace {

using std::chrono::nanoseconds;

}  // namespace

std::string format_duration(nanoseconds length) {
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(length.count(), 0));
  if (ns < 1'000) return fmt::format("{} ns", ns);
  const auto thousandths = [&](std::uint64_t unit) { return (ns + unit / 2'000) / (unit / 1'000); };
  std::uint64_t scaled = 0;
  std::string_view unit;
  if (ns < 1'000'000) {
    scaled = ns;
    unit = "us";
  } else if (ns < 1'000'000'000) {
    scaled = thousandths(1'000'000);
    unit = "ms";
  } else {
    scaled = thousandths(1'000'000'000);
    unit = "s";
  }
  return fmt::format("{}.{:03} {}", scaled / 1'000, scaled % 1'000, unit);
}

std::string format_offset(nanoseconds offset) {
  const auto count = offset.count();
  const auto magnitude = static_cast<std::uint64_t>(count < 0 ? -count : count);
  return fmt::format("{}{}.{:06} ms", count < 0 ? '-' : '+', magnitude / 1'000'000,
                     magnitude % 1'000'000);
}

namespace {

std::string display_name(std::string_view kernel, profile_level level) {
  return format_kernel_name(kernel, level == profile_level::full ? name_format::full
                                                                 : name_format::balanced);
}

std::string where_it_ran(const launch_info& info) {
  return fmt::format("on {}:{} stream {}", info.backend, info.device, info.stream);
}

std::string_view flags(const launch_info& info) {
  if (info.dry_run) return " [dry run]";
  if (info.capturing) return " [captured]";
  return "";
}

}  // namespace

std::string execution_line(const launch_info& info) {
  return fmt::format("launch {} {}{}", display_name(info.kernel, profile_level::execution_only),
                     where_it_ran(info), flags(info));
}

namespace {

std::string timing_text(const reading_outcome& outcome) {
  if (outcome.ticks) {
    return fmt::format("took {} ({})", format_duration(outcome.ticks->length()),
                       to_string(outcome.method));
  }
  if (!outcome.failure.empty()) return fmt::format("untimed (reading failed: {})", outcome.failure);
  return "untimed (no measurement)";
}

}  // namespace

std::string timed_line(const launch_info& info, profile_level level, const reading_outcome& outcome,
                       instant origin) {
  if (level != profile_level::full) {
    return fmt::format("launch {} {}{}", display_name(info.kernel, level), timing_text(outcome),
                       flags(info));
  }
  std::string line = fmt::format(
      "launch {} {} grid {}x{}x{} cube {}x{}x{}", info.kernel, where_it_ran(info),
      info.cube_count[0], info.cube_count[1], info.cube_count[2], info.cube_dim[0],
      info.cube_dim[1], info.cube_dim[2]);
  if (outcome.ticks) {
    fmt::format_to(std::back_inserter(line), " start {} end {}",
                   format_offset(std::chrono::duration_cast<nanoseconds>(outcome.ticks->start() - origin)),
                   format_offset(std::chrono::duration_cast<nanoseconds>(outcome.ticks->end() - origin)));
  }
  fmt::format_to(std::back_inserter(line), " {}{}", timing_text(outcome), flags(info));
  return line;
}

namespace {

struct summary_row {
  std::string name;
  totals sum;
};

/// The summary table of one timing method: rows by total time, longest first, then a total row
/// whose time is the 100% the shares add up to. Drawn by the rules every launchwatch table follows
/// (core/interface/text_table.hpp), so it reads like the attribution tree.
std::vector<std::string> render_timed_table(timing_method method, std::vector<summary_row> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const summary_row& a, const summary_row& b) {
    if (a.sum.time != b.sum.time) return a.sum.time > b.sum.time;
    return a.name < b.name;
  });
  totals all;
  std::vector<std::int64_t> parts;
  for (const auto& row : rows) {
    all.time += row.sum.time;
    all.count += row.sum.count;
    parts.push_back(row.sum.time.count());
  }
  const auto shares = apportion(parts, whole_share);
  const bool shareable = all.time.count() > 0;
  std::vector<std::vector<std::string>> cells{{"kernel", "launches", "total", "share"}};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    cells.push_back({rows[i].name, std::to_string(rows[i].sum.count),
                     format_time(rows[i].sum.time),
                     shareable ? format_share(shares[i]) : std::string{"-"}});
  }
  cells.push_back({"total", std::to_string(all.count), format_time(all.time),
                   shareable ? format_share(whole_share) : std::string{"-"}});
  std::vector<std::string> lines{fmt::format("profile summary ({} timing): {} launch{}, {}",
                                             to_string(method), all.count,
                                             all.count == 1 ? "" : "es", format_time(all.time))};
  for (auto& line : lay_out_table(cells)) lines.push_back(std::move(line));
  return lines;
}

std::vector<std::string> render_untimed_table(const std::vector<std::pair<std::string, std::uint64_t>>& rows) {
  std::uint64_t count = 0;
  for (const auto& row : rows) count += row.second;
  std::vector<std::vector<std::string>> cells{{"kernel", "launches"}};
  for (const auto& [name, n] : rows) cells.push_back({name, std::to_string(n)});
  std::vector<std::string> lines{fmt::format("untimed launches (no measurement): {}", count)};
  for (auto& line : lay_out_table(cells)) lines.push_back(std::move(line));
  return lines;
}

}  // namespace

void running_totals::add(std::string_view kernel, const reading_outcome& outcome) {
  if (outcome.ticks) {
    auto& by_name = timed[static_cast<std::size_t>(outcome.method)];
    auto it = by_name.find(kernel);
    if (it == by_name.end()) it = by_name.emplace(std::string{kernel}, totals{}).first;
    it->second.time += outcome.ticks->length();
    ++it->second.count;
  } else {
    auto it = untimed.find(kernel);
    if (it == untimed.end()) it = untimed.emplace(std::string{kernel}, 0).first;
    ++it->second;
  }
}

bool running_totals::empty() const {
  return timed[0].empty() && timed[1].empty() && untimed.empty();
}

std::vector<std::string> running_totals::render(profile_level level) const {
  std::vector<std::string> lines;
  for (const auto method : {timing_method::device, timing_method::system}) {
    const auto& by_name = timed[static_cast<std::size_t>(method)];
    if (by_name.empty()) continue;
    std::vector<summary_row> rows;
    for (const auto& [name, sum] : by_name) rows.push_back({display_name(name, level), sum});
    for (auto& line : render_timed_table(method, std::move(rows))) lines.push_back(std::move(line));
  }
  if (!untimed.empty()) {
    std::vector<std::pair<std::string, std::uint64_t>> rows;
    for (const auto& [name, n] : untimed) rows.emplace_back(display_name(name, level), n);
    for (auto& line : render_untimed_table(rows)) lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace launchwatch::detail
