// The tree table: where a pass's device time went, by scope and kernel, adding up to 100%.

#include <launchwatch/report/tree.hpp>

#include <algorithm>
#include <memory>
#include <cstdint>
#include <optional>
#include <ostream>
#include <sstream>
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
using detail::format_share;
using detail::format_time;

const char* methods_text(timing_methods methods) {
  if (methods.mixed()) return "mixed";
  if (methods.device) return "device";
  if (methods.system) return "system";
  return "-";
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

/// Orders rows so the largest comes first and equal rows always print the same way.
bool hotter(const summary_node& a, const summary_node& b) {
  if (a.total != b.total) return a.total > b.total;
  if (a.launches != b.launches) return a.launches > b.launches;
  if (a.kind != b.kind) return a.kind == summary_node::node_kind::scope;
  return a.name < b.name;
}

void sort_by_time(std::vector<summary_node>& rows) {
  std::stable_sort(rows.begin(), rows.end(), hotter);
  for (auto& row : rows) sort_by_time(row.children);
}

/// The accounting the table's 100% is, picked from the summary by tree_options::accounting.
struct accounting_view {
  nanoseconds window;
  nanoseconds idle;
  nanoseconds overlap;
  const char* idle_label;
  const char* idle_unknown_label;
  bool per_device;
};

accounting_view view_of(const pass_summary& s, idle_accounting accounting) {
  if (accounting == idle_accounting::stream) {
    return {s.window, s.idle, s.overlap, "[stream idle]", "[stream idle: unknown, lengths only]", false};
  }
  return {s.device_window, s.device_idle, s.device_overlap, "[device idle]", "[device idle: unknown, lengths only]", true};
}

/// The shares of `rows` when together they hold `units` tenths of a percent.
std::vector<std::int64_t> shares_of(const std::vector<summary_node>& rows, std::int64_t units) {
  std::vector<std::int64_t> parts;
  parts.reserve(rows.size());
  for (const auto& row : rows) parts.push_back(row.total.count());
  return detail::apportion(parts, units);
}

/// Appends `node`'s row and, down to tree_options::depth, its children's, under `path`.
///
/// `share`: the row's share in tenths of a percent, when the table has a window. Its children
/// share it out among themselves by largest remainder, so they add up to it as the top-level rows
/// add up to 100.0%.
void add_rows(std::vector<tree_row>& rows, std::vector<std::string>& path, const summary_node& node,
              std::string name, std::optional<std::int64_t> share, std::size_t depth) {
  path.push_back(std::move(name));
  tree_row row;
  row.kind = node.kind == summary_node::node_kind::kernel ? tree_row::row_kind::kernel
                                                          : tree_row::row_kind::scope;
  row.path = path;
  row.launches = node.launches;
  row.timed_launches = node.timed_launches;
  row.dry_run_launches = node.dry_run_launches;
  row.self = node.self;
  row.total = node.total;
  row.timed = node.timed_launches > 0;
  if (row.timed) row.share_tenths = share;
  row.methods = node.methods;
  row.folded = depth != 0 && path.size() >= depth && !node.children.empty();
  rows.push_back(std::move(row));
  if (!rows.back().folded) {
    std::vector<std::int64_t> child_shares;
    if (share) child_shares = shares_of(node.children, *share);
    for (std::size_t i = 0; i < node.children.size(); ++i) {
      const auto& child = node.children[i];
      add_rows(rows, path, child, child.name, share ? std::optional{child_shares[i]} : std::nullopt,
               depth);
    }
  }
  path.pop_back();
}

bool timed_table(const pass_summary& summary) {
  return summary.timing != timing_request::none || summary.timed_launches > 0;
}

class table {
 public:
  table(const pass_summary& summary, const tree_options& options)
      : options_{options}, timed_{timed_table(summary)}, method_column_{summary.methods.mixed()} {}

  void add_row(const tree_row& row) {
    const auto depth = row.path.size() - 1;
    std::vector<std::string> r{std::string(2 * depth, ' ') + label_of(row)};
    if (row.kind == tree_row::row_kind::idle || row.kind == tree_row::row_kind::overlap) {
      r.emplace_back("");
      add_times(r, "", row.timed ? format_time(row.total) : "-",
                row.share_tenths ? format_share(*row.share_tenths) : "-");
      rows_.push_back(std::move(r));
      return;
    }
    r.push_back(detail::launches_cell(row.launches, row.timed_launches, row.dry_run_launches, timed_));
    if (row.timed) {
      add_times(r, format_time(row.self), format_time(row.total),
                row.share_tenths ? format_share(*row.share_tenths) : "-");
    } else {
      add_times(r, "-", "-", "-");
    }
    if (method_column_) r.emplace_back(methods_text(row.methods));
    rows_.push_back(std::move(r));
  }

  void add_plain(std::string label, std::string launches, std::string total, std::string share) {
    std::vector<std::string> r{std::move(label), std::move(launches)};
    add_times(r, "", std::move(total), std::move(share));
    rows_.push_back(std::move(r));
  }

  bool timed() const { return timed_; }

  void write(std::ostream& out) const {
    std::vector<std::vector<std::string>> cells{{"scope / kernel", "launches"}};
    std::vector<detail::column_align> align{detail::column_align::left, detail::column_align::right};
    if (timed_) {
      cells[0].insert(cells[0].end(), {"self", "total", "share"});
      align.insert(align.end(), 3, detail::column_align::right);
    }
    if (method_column_) {
      cells[0].emplace_back("method");
      align.push_back(detail::column_align::left);
    }
    cells.insert(cells.end(), rows_.begin(), rows_.end());
    for (const auto& line : detail::lay_out_table(cells, align)) out << line << '\n';
  }

 private:
  std::string label_of(const tree_row& row) const {
    const auto& name = row.path.back();
    if (row.kind == tree_row::row_kind::kernel) return format_kernel_name(name, options_.kernel_names);
    if (row.kind == tree_row::row_kind::scope && name.empty()) return "(unnamed scope)";
    return name;
  }

  void add_times(std::vector<std::string>& r, std::string self, std::string total,
                 std::string share) const {
    if (!timed_) return;
    r.push_back(std::move(self));
    r.push_back(std::move(total));
    r.push_back(std::move(share));
  }

  const tree_options& options_;
  bool timed_;
  bool method_column_;
  std::vector<std::vector<std::string>> rows_;
};

/// Why a pass's measurements came as lengths only: the launch path read them on the issuing
/// thread, because the observer asked it to (`resolved`) or because the profiling logger read
/// every measurement (whatever was asked).
const char* why_lengths_only(timing_request timing) {
  return timing == timing_request::resolved
             ? "each measurement was read on the issuing thread"
             : "the profiling logger read each measurement";
}

/// The header's timing line: how the times below were measured, as the measurements themselves
/// say (by method, and timestamps or lengths only), with the request in parentheses.
std::string timing_line(const pass_summary& s) {
  const std::string_view request = to_string(s.timing);
  if (s.timed_launches == 0) {
    if (s.timing == timing_request::none) {
      return "timing: not requested (timing_request::none): launches are counted, not timed";
    }
    return fmt::format("timing: requested ({}), but no launch has a measurement", request);
  }
  const auto& m = s.measurements;
  if (s.methods.mixed()) {
    auto kinds = [](std::size_t stamped, std::size_t lengths) {
      if (lengths == 0) return fmt::format("{} with start and end", stamped);
      const char* only = lengths == 1 ? "length only" : "lengths only";
      if (stamped == 0) return fmt::format("{} {}", lengths, only);
      return fmt::format("{} with start and end, {} {}", stamped, lengths, only);
    };
    std::string line = fmt::format(
        "timing: MIXED ({}): device times ({}) and host wall time ({}) are added together below; "
        "the method column says which each row holds",
        request, kinds(m.device_stamped, m.device_lengths),
        kinds(m.system_stamped, m.system_lengths));
    if (m.device_lengths + m.system_lengths > 0) {
      line += fmt::format("; lengths only where {}, so those kernels ran one at a time",
                          why_lengths_only(s.timing));
    }
    return line;
  }
  const bool device = s.methods.device;
  const auto stamped = device ? m.device_stamped : m.system_stamped;
  const auto lengths = device ? m.device_lengths : m.system_lengths;
  if (lengths == 0) {
    return device ? fmt::format("timing: device ({}): each kernel's start and end stamped by the "
                                "device on one clock",
                                request)
                  : fmt::format("timing: system ({}): host wall time around each blocking "
                                "submit, submission and waiting included",
                                request);
  }
  const char* system_note = device ? "" : "; host wall time around each blocking submit, "
                                          "submission and waiting included";
  if (stamped == 0) {
    return fmt::format("timing: {}, lengths only ({}{}): {}, so kernels ran one at a time{}{}",
                       device ? "device" : "system", request,
                       s.timing == timing_request::resolved ? "" : " asked",
                       why_lengths_only(s.timing),
                       s.timing == timing_request::resolved ? "" : " and only their lengths are known",
                       system_note);
  }
  // Some of each: the profiling logger was turned on or off during the pass, say.
  return fmt::format(
      "timing: {} ({}): {} with {} start and end {}, {} known only by length ({}, so they ran one "
      "at a time){}",
      device ? "device" : "system", request, plural(stamped, "kernel", "kernels"),
      stamped == 1 ? "its" : "their",
      device ? "stamped by the device on one clock" : "on the host clock", lengths,
      s.timing == timing_request::resolved ? "read on the issuing thread"
                                           : "the profiling logger read those",
      system_note);
}

void write_header(std::ostream& out, const pass_summary& s, const accounting_view& view) {
  std::string first = fmt::format("launchwatch: {} from {} on {}", plural(s.launches, "launch", "launches"),
                                  plural(s.host_threads, "host thread", "host threads"),
                                  plural(s.streams.size(), "stream", "streams"));
  if (view.per_device) first += fmt::format(" of {}", plural(s.devices.size(), "device", "devices"));
  if (s.dry_run_launches > 0) {
    first += fmt::format("; {} dry-run (reported, not executed, no device time)", s.dry_run_launches);
  }
  if (s.captured_launches > 0) {
    first += fmt::format("; {} recorded into graphs", s.captured_launches);
  }
  out << first << '\n';

  out << timing_line(s) << '\n';
  const auto untimed = s.launches - std::min(s.launches, s.timed_launches + s.dry_run_launches);
  if (s.timed_launches > 0 && untimed > 0) {
    // A merged job of timed and untimed processes, launches captured into graphs, measurements
    // lost: the timing line above is not true of these.
    out << fmt::format("untimed: {} of {} have no time; the times below are of the other {}\n",
                       untimed, plural(s.launches, "launch", "launches"),
                       s.launches - untimed);
  }

  if (view.window.count() > 0) {
    // What "first start to last end" is taken over, and summed over.
    const auto where =
        view.per_device
            ? fmt::format("on each device, its streams' kernels united, summed over {}",
                          plural(s.devices.size(), "device", "devices"))
            : fmt::format("on each stream, summed over {}", plural(s.streams.size(), "stream", "streams"));
    const auto& m = s.measurements;
    const auto stamped = m.device_stamped + m.system_stamped;
    const auto lengths = m.device_lengths + m.system_lengths;
    if (lengths == 0) {
      out << fmt::format("100% = {}: first kernel start to last kernel end {}\n",
                         format_time(view.window), where);
    } else if (stamped == 0) {
      out << fmt::format(
          "100% = {}: the lengths of {}, summed over {}; they have no place on a timeline, so "
          "idle time around them is unknown\n",
          format_time(view.window), plural(lengths, "kernel", "kernels"),
          view.per_device ? plural(s.devices.size(), "device", "devices")
                          : plural(s.streams.size(), "stream", "streams"));
    } else {
      // The window is the two parts added: say both, so neither reads as added to the 100%.
      out << fmt::format(
          "100% = {}: {} from first kernel start to last kernel end {}, and {} of kernels known "
          "only by length (idle time around them is unknown)\n",
          format_time(view.window), format_time(view.window - s.unplaced), where,
          format_time(s.unplaced));
    }
  }

  const auto lost = s.lost.empty + s.lost.failed + s.lost.unpaired;
  if (lost > 0) {
    out << fmt::format(
        "lost: {} (empty {}, failed to read {}, unpaired {}); their launches have no time\n",
        plural(lost, "measurement", "measurements"), s.lost.empty, s.lost.failed,
        s.lost.unpaired);
  }
  if (s.out_of_order_kernels > 0) {
    out << fmt::format(
        "estimate: {} reached the aggregate-only attribution too late to be put in order, so idle "
        "time and overlap are estimates\n",
        plural(s.out_of_order_kernels, "kernel's place on the timeline", "kernels' places on the timeline"));
  }
}

/// The devices and their streams side by side: each device's window with its streams united, and
/// each stream's own.
void write_devices(std::ostream& out, const pass_summary& s) {
  std::vector<std::vector<std::string>> cells{
      {"device / stream", "launches", "window", "kernels", "idle", "overlap"}};
  auto idle_text = [&](nanoseconds window, nanoseconds unplaced, nanoseconds idle) {
    // Nothing placed on the timeline: its idle time is unknown, not zero.
    return window == unplaced ? std::string{"-"} : format_time(idle);
  };
  for (const auto& device : s.devices) {
    const std::string named =
        device.backend.empty() ? fmt::format("unknown backend, device {}", device.device)
                               : fmt::format("{} device {}", device.backend, device.device);
    cells.push_back({device.process.empty() ? named : fmt::format("{}: {}", device.process, named),
                     std::to_string(device.launches), format_time(device.window),
                     format_time(device.kernel_time),
                     idle_text(device.window, device.unplaced, device.idle),
                     format_time(device.overlap)});
    for (const auto& stream : s.streams) {
      if (stream.process != device.process || stream.stream.backend != device.backend ||
          stream.stream.device != device.device) {
        continue;
      }
      cells.push_back({fmt::format("  stream {}", stream.stream.stream), std::to_string(stream.launches),
                       format_time(stream.window), format_time(stream.kernel_time),
                       idle_text(stream.window, stream.unplaced, stream.idle),
                       format_time(stream.overlap)});
    }
  }
  for (const auto& line : detail::lay_out_table(cells)) out << line << '\n';
}

}  // namespace

std::vector<tree_row> build_tree_rows(const pass_summary& summary, const tree_options& options) {
  const auto view = view_of(summary, options.accounting);
  auto scopes = summary.scopes;
  auto outside = summary.outside;
  if (options.order == tree_order::time) {
    sort_by_time(scopes);
    sort_by_time(outside.children);
  }

  const bool shared = view.window.count() > 0;
  const auto& m = summary.measurements;
  // Only lengths: no kernel has a place on a timeline, so there is no idle time to show, and a
  // zero would claim the device never waited.
  const bool idle_known = m.device_stamped + m.system_stamped > 0;
  std::vector<std::int64_t> parts;
  for (const auto& scope : scopes) parts.push_back(scope.total.count());
  if (summary.outside.launches > 0) parts.push_back(outside.total.count());
  if (idle_known) parts.push_back(view.idle.count());
  if (view.overlap.count() > 0) parts.push_back(-view.overlap.count());
  const auto shares = detail::apportion(parts, detail::whole_share);
  std::size_t next = 0;
  auto share = [&]() -> std::optional<std::int64_t> {
    const auto at = next++;
    if (!shared) return std::nullopt;
    return shares[at];
  };

  std::vector<tree_row> rows;
  std::vector<std::string> path;
  for (const auto& scope : scopes) add_rows(rows, path, scope, scope.name, share(), options.depth);
  if (summary.outside.launches > 0) {
    add_rows(rows, path, outside, "[outside any scope]", share(), options.depth);
  }
  if (shared) {
    tree_row idle;
    idle.kind = tree_row::row_kind::idle;
    idle.timed = idle_known;
    idle.path = {idle_known ? view.idle_label : view.idle_unknown_label};
    if (idle_known) {
      idle.total = view.idle;
      idle.self = view.idle;
      idle.share_tenths = share();
    }
    rows.push_back(std::move(idle));
  }
  if (view.overlap.count() > 0) {
    tree_row overlap;
    overlap.kind = tree_row::row_kind::overlap;
    overlap.timed = true;
    overlap.path = {"[overlap, counted twice above]"};
    overlap.total = -view.overlap;
    overlap.self = -view.overlap;
    overlap.share_tenths = share();
    rows.push_back(std::move(overlap));
  }
  return rows;
}

namespace {

const char* kind_name(tree_row::row_kind kind) {
  switch (kind) {
    case tree_row::row_kind::kernel:
      return "kernel";
    case tree_row::row_kind::idle:
      return "idle";
    case tree_row::row_kind::overlap:
      return "overlap";
    case tree_row::row_kind::scope:
      break;
  }
  return "scope";
}

void write_tree_csv(std::ostream& out, const std::vector<tree_row>& rows, nanoseconds window) {
  out << detail::csv_line({"path", "kind", "launches", "self_ns", "total_ns", "share"});
  for (const auto& row : rows) {
    const bool counted = row.kind == tree_row::row_kind::scope || row.kind == tree_row::row_kind::kernel;
    out << detail::csv_line(
        {detail::path_cell(row.path), kind_name(row.kind), counted ? std::to_string(row.launches) : "",
         row.timed ? std::to_string(row.self.count()) : "", row.timed ? std::to_string(row.total.count()) : "",
         row.timed ? detail::fraction_text(row.total.count(), window.count()) : ""});
  }
}

void write_tree_json(std::ostream& out, const pass_summary& summary, const tree_options& options,
                     const std::vector<tree_row>& rows, nanoseconds window) {
  using json = nlohmann::ordered_json;
  json j;
  j["format"] = "launchwatch-tree";
  j["accounting"] = options.accounting == idle_accounting::stream ? "stream" : "device";
  j["window_ns"] = window.count();
  j["launches"] = summary.launches;
  j["timed_launches"] = summary.timed_launches;
  auto list = json::array();
  for (const auto& row : rows) {
    json r;
    r["path"] = row.path;
    r["kind"] = kind_name(row.kind);
    r["launches"] = row.launches;
    r["timed_launches"] = row.timed_launches;
    r["dry_run_launches"] = row.dry_run_launches;
    r["self_ns"] = row.timed ? json(row.self.count()) : json(nullptr);
    r["total_ns"] = row.timed ? json(row.total.count()) : json(nullptr);
    r["share"] = row.timed && window.count() > 0
                     ? json(static_cast<double>(row.total.count()) / static_cast<double>(window.count()))
                     : json(nullptr);
    if (row.folded) r["folded"] = true;
    list.push_back(std::move(r));
  }
  j["rows"] = std::move(list);
  out << j.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace

tree_table_writer::tree_table_writer(const tree_options& options)
    : report_writer{"tree", default_file_name}, options_{options} {}

void tree_table_writer::do_write(std::ostream& out, const pass_summary& summary) {
  const auto view = view_of(summary, options_.accounting);
  table t{summary, options_};
  for (const auto& row : build_tree_rows(summary, options_)) t.add_row(row);
  const bool shared = view.window.count() > 0;
  t.add_plain("total",
              detail::launches_cell(summary.launches, summary.timed_launches, summary.dry_run_launches,
                                    t.timed()),
              shared ? format_time(view.window) : "-", shared ? format_share(detail::whole_share) : "-");

  write_header(out, summary, view);
  out << '\n';
  t.write(out);
  if (shared) {
    out << '\n';
    write_devices(out, summary);
  }
}

tree_csv_writer::tree_csv_writer(const tree_options& options)
    : report_writer{"tree-csv", default_file_name}, options_{options} {}

void tree_csv_writer::do_write(std::ostream& out, const pass_summary& summary) {
  write_tree_csv(out, build_tree_rows(summary, options_), view_of(summary, options_.accounting).window);
}

tree_json_writer::tree_json_writer(const tree_options& options)
    : report_writer{"tree-json", default_file_name}, options_{options} {}

void tree_json_writer::do_write(std::ostream& out, const pass_summary& summary) {
  write_tree_json(out, summary, options_, build_tree_rows(summary, options_),
                  view_of(summary, options_.accounting).window);
}

std::unique_ptr<report_writer<pass_summary>> make_tree_writer(const tree_options& options) {
  return detail::writer_for_format<tree_table_writer, tree_csv_writer, tree_json_writer>(options);
}

void write_tree(std::ostream& out, const pass_summary& summary, const tree_options& options) {
  make_tree_writer(options)->write(out, summary);
}

std::string render_tree(const pass_summary& summary, const tree_options& options) {
  std::ostringstream out;
  write_tree(out, summary, options);
  return out.str();
}

}  // namespace launchwatch
