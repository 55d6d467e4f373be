// The kernel table: a summary's kernel rows gathered by name, and the table written three ways.

#include <launchwatch/report/kernel_table.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/interface/text_table.hpp"
#include "report_cells.hpp"
#include "writer_for_format.hpp"

namespace launchwatch {
namespace {

using std::chrono::nanoseconds;

/// A row being gathered: whether every timed row it was drawn from had a min and a max.
struct gathering {
  kernel_row row;
  bool extremes_known = true;
};

void gather(std::map<std::string_view, gathering>& kernels, const std::vector<summary_node>& nodes) {
  for (const auto& node : nodes) {
    if (node.kind == summary_node::node_kind::scope) {
      gather(kernels, node.children);
      continue;
    }
    auto& [row, extremes_known] = kernels[node.name];
    row.launches += node.launches;
    row.timed_launches += node.timed_launches;
    row.dry_run_launches += node.dry_run_launches;
    row.total += node.total;
    row.methods |= node.methods;
    if (node.timed_launches == 0) continue;
    if (!node.min_time || !node.max_time) {
      extremes_known = false;
      continue;
    }
    if (!row.min_time || *node.min_time < *row.min_time) row.min_time = node.min_time;
    if (!row.max_time || *node.max_time > *row.max_time) row.max_time = node.max_time;
  }
}

std::string time_cell(const std::optional<nanoseconds>& time) {
  return time ? detail::format_time(*time) : std::string{"-"};
}

std::string ns_cell(const std::optional<nanoseconds>& time) {
  return time ? std::to_string(time->count()) : std::string{};
}

nlohmann::ordered_json ns_json(const std::optional<nanoseconds>& time) {
  return time ? nlohmann::ordered_json(time->count()) : nlohmann::ordered_json(nullptr);
}

std::optional<nanoseconds> timed_total(const kernel_row& row) {
  return row.timed_launches > 0 ? std::optional{row.total} : std::nullopt;
}

void write_csv(std::ostream& out, const kernel_table& table, const kernel_table_options& options) {
  out << detail::csv_line({"kernel", "count", "total_ns", "avg_ns", "min_ns", "max_ns", "share"});
  for (const auto& row : table.rows) {
    out << detail::csv_line({format_kernel_name(row.name, options.kernel_names), std::to_string(row.launches),
                             ns_cell(timed_total(row)), ns_cell(row.average()), ns_cell(row.min_time),
                             ns_cell(row.max_time),
                             row.timed_launches > 0
                                 ? detail::fraction_text(row.total.count(), table.kernel_time.count())
                                 : std::string{}});
  }
}

void write_json(std::ostream& out, const kernel_table& table, const kernel_table_options& options) {
  using json = nlohmann::ordered_json;
  json j;
  j["format"] = "launchwatch-kernels";
  j["kernel_ns"] = table.kernel_time.count();
  j["launches"] = table.launches;
  auto rows = json::array();
  for (const auto& row : table.rows) {
    json r;
    r["kernel"] = format_kernel_name(row.name, options.kernel_names);
    r["count"] = row.launches;
    r["timed_count"] = row.timed_launches;
    r["dry_run_count"] = row.dry_run_launches;
    r["total_ns"] = ns_json(timed_total(row));
    r["avg_ns"] = ns_json(row.average());
    r["min_ns"] = ns_json(row.min_time);
    r["max_ns"] = ns_json(row.max_time);
    r["share"] = row.timed_launches > 0 && table.kernel_time.count() > 0
                     ? json(static_cast<double>(row.total.count()) /
                            static_cast<double>(table.kernel_time.count()))
                     : json(nullptr);
    rows.push_back(std::move(r));
  }
  j["rows"] = std::move(rows);
  out << j.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

void write_text(std::ostream& out, const kernel_table& table, const kernel_table_options& options) {
  const auto kernels = table.rows.size();
  std::string header = fmt::format("launchwatch: {} {}, {} {}", kernels, kernels == 1 ? "kernel" : "kernels",
                                    table.launches, table.launches == 1 ? "launch" : "launches");
  const bool shared = table.kernel_time.count() > 0;
  if (shared) {
    header += fmt::format(
        "; 100% = {}: the kernels' times added up (kernels that ran at once each counted whole)",
        detail::format_time(table.kernel_time));
  } else if (!table.timed) {
    header += "; not timed: launches are counted";
  }
  out << header << "\n\n";

  std::vector<std::vector<std::string>> cells{{"kernel", "launches"}};
  if (table.timed) cells[0].insert(cells[0].end(), {"total", "avg", "min", "max", "share"});
  std::vector<std::int64_t> parts;
  parts.reserve(kernels);
  for (const auto& row : table.rows) parts.push_back(row.total.count());
  const auto shares = detail::apportion(parts, detail::whole_share);
  std::size_t timed_launches = 0;
  std::size_t dry_run_launches = 0;
  for (std::size_t i = 0; i < kernels; ++i) {
    const auto& row = table.rows[i];
    timed_launches += row.timed_launches;
    dry_run_launches += row.dry_run_launches;
    std::vector<std::string> r{format_kernel_name(row.name, options.kernel_names),
                               detail::launches_cell(row.launches, row.timed_launches,
                                                     row.dry_run_launches, table.timed)};
    if (table.timed) {
      const bool has_share = shared && row.timed_launches > 0;
      r.insert(r.end(), {time_cell(timed_total(row)), time_cell(row.average()), time_cell(row.min_time),
                         time_cell(row.max_time), has_share ? detail::format_share(shares[i]) : "-"});
    }
    cells.push_back(std::move(r));
  }
  std::vector<std::string> total{"total", detail::launches_cell(table.launches, timed_launches,
                                                                dry_run_launches, table.timed)};
  if (table.timed) {
    total.insert(total.end(), {shared ? detail::format_time(table.kernel_time) : "-", "", "", "",
                               shared ? detail::format_share(detail::whole_share) : "-"});
  }
  cells.push_back(std::move(total));
  for (const auto& line : detail::lay_out_table(cells)) out << line << '\n';
}

}  // namespace

std::optional<nanoseconds> kernel_row::average() const {
  if (timed_launches == 0) return std::nullopt;
  const auto n = static_cast<std::int64_t>(timed_launches);
  const auto sum = total.count();
  // Rounded to nearest, half away from zero (times are not negative, but stay exact if one is).
  return nanoseconds{sum >= 0 ? (sum + n / 2) / n : -((-sum + n / 2) / n)};
}

kernel_table build_kernel_table(const pass_summary& summary) {
  std::map<std::string_view, gathering> kernels;
  gather(kernels, summary.scopes);
  gather(kernels, summary.outside.children);
  kernel_table table;
  table.launches = summary.launches;
  table.timed = summary.timing != timing_request::none || summary.timed_launches > 0;
  table.rows.reserve(kernels.size());
  for (auto& [name, gathered] : kernels) {
    gathered.row.name = std::string{name};
    if (!gathered.extremes_known) {
      gathered.row.min_time.reset();
      gathered.row.max_time.reset();
    }
    table.kernel_time += gathered.row.total;
    table.rows.push_back(std::move(gathered.row));
  }
  // The map gave them by name, so equal rows keep that order.
  std::stable_sort(table.rows.begin(), table.rows.end(), [](const kernel_row& a, const kernel_row& b) {
    if (a.total != b.total) return a.total > b.total;
    return a.launches > b.launches;
  });
  return table;
}

kernels_table_writer::kernels_table_writer(const kernel_table_options& options)
    : report_writer{"kernels", default_file_name}, options_{options} {}

void kernels_table_writer::do_write(std::ostream& out, const pass_summary& summary) {
  write_text(out, build_kernel_table(summary), options_);
}

kernels_csv_writer::kernels_csv_writer(const kernel_table_options& options)
    : report_writer{"kernels-csv", default_file_name}, options_{options} {}

void kernels_csv_writer::do_write(std::ostream& out, const pass_summary& summary) {
  write_csv(out, build_kernel_table(summary), options_);
}

kernels_json_writer::kernels_json_writer(const kernel_table_options& options)
    : report_writer{"kernels-json", default_file_name}, options_{options} {}

void kernels_json_writer::do_write(std::ostream& out, const pass_summary& summary) {
  write_json(out, build_kernel_table(summary), options_);
}

std::unique_ptr<report_writer<pass_summary>> make_kernel_table_writer(
    const kernel_table_options& options) {
  return detail::writer_for_format<kernels_table_writer, kernels_csv_writer, kernels_json_writer>(
      options);
}

void write_kernel_table(std::ostream& out, const pass_summary& summary,
                        const kernel_table_options& options) {
  make_kernel_table_writer(options)->write(out, summary);
}

}  // namespace launchwatch
