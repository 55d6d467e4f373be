// Two summaries compared row by row, and the comparison as a table.

#include <launchwatch/report/diff.hpp>

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/interface/text_table.hpp"
#include "report_cells.hpp"
#include "writer_for_format.hpp"

namespace launchwatch {
namespace {

using std::chrono::nanoseconds;

constexpr const char* outside_name = "[outside any scope]";

diff_side side_of(const summary_node& node) {
  return diff_side{node.launches, node.total, node.timed_launches > 0};
}

bool same_row(const summary_node& a, const summary_node& b) {
  return a.kind == b.kind && a.name == b.name;
}

/// Adds `base` and `current` (either may be null) and their children, matched by kind and name.
void merge(const summary_node* base, const summary_node* current, std::string name,
           std::size_t depth, std::vector<diff_row>& rows) {
  const auto& any = current != nullptr ? *current : *base;
  diff_row row;
  row.kind = any.kind;
  row.name = std::move(name);
  row.depth = depth;
  if (base != nullptr) row.base = side_of(*base);
  if (current != nullptr) row.current = side_of(*current);
  rows.push_back(std::move(row));

  static const std::vector<summary_node> none;
  const auto& old_children = base != nullptr ? base->children : none;
  const auto& new_children = current != nullptr ? current->children : none;
  auto find = [](const std::vector<summary_node>& among, const summary_node& like) {
    const auto found = std::find_if(among.begin(), among.end(),
                                    [&](const summary_node& n) { return same_row(n, like); });
    return found == among.end() ? nullptr : &*found;
  };
  for (const auto& child : new_children) {
    merge(find(old_children, child), &child, child.name, depth + 1, rows);
  }
  for (const auto& child : old_children) {
    if (find(new_children, child) == nullptr) merge(&child, nullptr, child.name, depth + 1, rows);
  }
}

std::string signed_count(long long change) {
  return change > 0 ? fmt::format("+{}", change) : std::to_string(change);
}

std::string signed_time(nanoseconds change) {
  const auto text = detail::format_time(change);
  return change.count() > 0 ? "+" + text : text;
}

/// `new`, `gone`, or the time's change in percent (of launches when untimed).
std::string change_percent(const diff_row& row) {
  if (!row.base) return "new";
  if (!row.current) return "gone";
  const bool timed = row.base->timed && row.current->timed;
  const double before = timed ? static_cast<double>(row.base->time.count())
                              : static_cast<double>(row.base->launches);
  const double after = timed ? static_cast<double>(row.current->time.count())
                             : static_cast<double>(row.current->launches);
  if (!timed && !(row.base->timed || row.current->timed) && before == 0) return "-";
  if (before == 0) return after == 0 ? "0.0%" : "new";
  return fmt::format("{:+.1f}%", 100.0 * (after - before) / before);
}

}  // namespace

summary_diff diff_summaries(const pass_summary& base, const pass_summary& current) {
  // The top level as a scope of its own, so it merges like any other.
  auto top = [](const pass_summary& s) {
    summary_node node;
    node.children = s.scopes;
    if (s.outside.launches > 0) {
      node.children.push_back(s.outside);
      node.children.back().name = outside_name;
    }
    return node;
  };
  const auto base_top = top(base);
  const auto current_top = top(current);
  summary_diff diff;
  merge(&base_top, &current_top, "", 0, diff.rows);
  diff.rows.erase(diff.rows.begin());  // the made-up top row
  for (auto& row : diff.rows) --row.depth;
  diff.total.name = "total";
  diff.total.base = diff_side{base.launches, base.kernel_time, base.timed_launches > 0};
  diff.total.current = diff_side{current.launches, current.kernel_time, current.timed_launches > 0};
  return diff;
}

bool grew_past(const diff_row& row, double percent, growth_gate gate) {
  if (!row.current) return false;
  if (!row.base) return gate != growth_gate::time || row.current->timed;
  auto past = [&](long double before, long double after) {
    return after - before > before * static_cast<long double>(percent) / 100;
  };
  if (gate != growth_gate::time && past(row.base->launches, row.current->launches)) return true;
  return gate != growth_gate::count && row.base->timed && row.current->timed &&
         past(row.base->time.count(), row.current->time.count());
}

bool any_grew_past(const summary_diff& diff, const diff_options& options) {
  if (!options.fail_above) return false;
  bool grew = grew_past(diff.total, *options.fail_above, options.fail_on);
  for (const auto& row : diff.rows) grew = grew || grew_past(row, *options.fail_above, options.fail_on);
  return grew;
}

namespace {

/// Each row's path, from the rows' names and depths (a row follows the rows it sits under).
std::vector<std::vector<std::string>> paths_of(const summary_diff& diff) {
  std::vector<std::vector<std::string>> paths;
  std::vector<std::string> path;
  for (const auto& row : diff.rows) {
    path.resize(std::min(path.size(), row.depth));
    path.push_back(row.name);
    paths.push_back(path);
  }
  paths.push_back({diff.total.name});
  return paths;
}

const char* kind_of(const diff_row& row, bool total) {
  if (total) return "total";
  return row.kind == summary_node::node_kind::kernel ? "kernel" : "scope";
}

void write_diff_csv(std::ostream& out, const summary_diff& diff, const diff_options& options) {
  out << detail::csv_line({"path", "kind", "base_launches", "new_launches", "base_ns", "new_ns", "grew"});
  const auto paths = paths_of(diff);
  auto count = [](const std::optional<diff_side>& side) {
    return side ? std::to_string(side->launches) : std::string{};
  };
  auto time = [](const std::optional<diff_side>& side) {
    return side && side->timed ? std::to_string(side->time.count()) : std::string{};
  };
  for (std::size_t i = 0; i <= diff.rows.size(); ++i) {
    const bool total = i == diff.rows.size();
    const auto& row = total ? diff.total : diff.rows[i];
    const char* grew = !options.fail_above                                       ? ""
                       : grew_past(row, *options.fail_above, options.fail_on) ? "1"
                                                                              : "0";
    out << detail::csv_line({detail::path_cell(paths[i]), kind_of(row, total), count(row.base), count(row.current),
                             time(row.base), time(row.current), grew});
  }
}

void write_diff_json(std::ostream& out, const summary_diff& diff, const diff_options& options) {
  using json = nlohmann::ordered_json;
  const auto paths = paths_of(diff);
  auto side_json = [](const std::optional<diff_side>& side) {
    if (!side) return json(nullptr);
    json j;
    j["launches"] = side->launches;
    j["total_ns"] = side->timed ? json(side->time.count()) : json(nullptr);
    return j;
  };
  json j;
  j["format"] = "launchwatch-diff";
  if (options.fail_above) j["fail_above"] = *options.fail_above;
  auto rows = json::array();
  for (std::size_t i = 0; i <= diff.rows.size(); ++i) {
    const bool total = i == diff.rows.size();
    const auto& row = total ? diff.total : diff.rows[i];
    json r;
    r["path"] = paths[i];
    r["kind"] = kind_of(row, total);
    r["base"] = side_json(row.base);
    r["new"] = side_json(row.current);
    if (options.fail_above) r["grew"] = grew_past(row, *options.fail_above, options.fail_on);
    rows.push_back(std::move(r));
  }
  j["rows"] = std::move(rows);
  out << j.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

/// What the gate looked at, for the last line.
const char* gate_text(growth_gate gate) {
  switch (gate) {
    case growth_gate::count:
      return "in launches; new rows always count";
    case growth_gate::time:
      return "in device time; new timed rows always count";
    case growth_gate::any:
      break;
  }
  return "in launches or device time; new rows always count";
}

/// The comparison as a table (diff_table_writer).
void write_diff_table(std::ostream& out, const summary_diff& diff, const diff_options& options) {
  bool timed = false;
  for (const auto* side : {&diff.total.base, &diff.total.current}) timed = timed || (*side && (*side)->timed);
  std::vector<std::vector<std::string>> cells;
  cells.push_back({"scope / kernel", "base", "new", "+/-"});
  if (timed) cells[0].insert(cells[0].end(), {"base time", "new time", "+/- time"});
  cells[0].emplace_back("+/- %");
  if (options.fail_above) cells[0].emplace_back("");
  std::size_t grown = 0;
  auto add = [&](const diff_row& row) {
    std::string label = std::string(2 * row.depth, ' ') +
                        (row.kind == summary_node::node_kind::kernel
                             ? format_kernel_name(row.name, options.kernel_names)
                             : (row.name.empty() ? "(unnamed scope)" : row.name));
    auto count = [](const std::optional<diff_side>& side) {
      return side ? std::to_string(side->launches) : std::string{"-"};
    };
    auto time = [&](const std::optional<diff_side>& side) {
      return side && side->timed ? detail::format_time(side->time) : std::string{"-"};
    };
    const auto launches_change = static_cast<long long>(row.current ? row.current->launches : 0) -
                                 static_cast<long long>(row.base ? row.base->launches : 0);
    std::vector<std::string> r{std::move(label), count(row.base), count(row.current),
                               signed_count(launches_change)};
    if (timed) {
      const auto before = row.base && row.base->timed ? row.base->time : nanoseconds{0};
      const auto after = row.current && row.current->timed ? row.current->time : nanoseconds{0};
      const bool any_time = (row.base && row.base->timed) || (row.current && row.current->timed);
      r.insert(r.end(), {time(row.base), time(row.current),
                         any_time ? signed_time(after - before) : std::string{"-"}});
    }
    r.push_back(change_percent(row));
    if (options.fail_above) {
      const bool past = grew_past(row, *options.fail_above, options.fail_on);
      if (past) ++grown;
      r.emplace_back(past ? fmt::format("grew past {}%", *options.fail_above) : "");
    }
    cells.push_back(std::move(r));
  };
  for (const auto& row : diff.rows) add(row);
  add(diff.total);
  std::vector<detail::column_align> align(cells[0].size(), detail::column_align::right);
  if (options.fail_above) align.back() = detail::column_align::left;
  for (const auto& line : detail::lay_out_table(cells, align)) out << line << '\n';
  if (options.fail_above) {
    out << fmt::format("\n{} grew past {}% ({})\n",
                       grown == 0 ? std::string{"no row"}
                                  : fmt::format("{} {}", grown, grown == 1 ? "row" : "rows"),
                       *options.fail_above, gate_text(options.fail_on));
  }
}

}  // namespace

diff_table_writer::diff_table_writer(const diff_options& options)
    : report_writer{"diff", default_file_name}, options_{options} {}

void diff_table_writer::do_write(std::ostream& out, const summary_diff& diff) {
  write_diff_table(out, diff, options_);
}

diff_csv_writer::diff_csv_writer(const diff_options& options)
    : report_writer{"diff-csv", default_file_name}, options_{options} {}

void diff_csv_writer::do_write(std::ostream& out, const summary_diff& diff) {
  write_diff_csv(out, diff, options_);
}

diff_json_writer::diff_json_writer(const diff_options& options)
    : report_writer{"diff-json", default_file_name}, options_{options} {}

void diff_json_writer::do_write(std::ostream& out, const summary_diff& diff) {
  write_diff_json(out, diff, options_);
}

std::unique_ptr<report_writer<summary_diff>> make_diff_writer(const diff_options& options) {
  return detail::writer_for_format<diff_table_writer, diff_csv_writer, diff_json_writer>(options);
}

void write_diff(std::ostream& out, const summary_diff& diff, const diff_options& options) {
  make_diff_writer(options)->write(out, diff);
}

}  // namespace launchwatch
