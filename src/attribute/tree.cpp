// The tree table: where a pass's device time went, by scope and kernel, adding up to 100%.

#include <launchwatch/attribute/render.hpp>

#include <algorithm>
#include <array>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace launchwatch {
namespace {

using std::chrono::nanoseconds;

/// The unit every time in one table is written in.
struct time_unit {
  const char* name;
  double per_ns;
  int decimals;
};

time_unit unit_for(nanoseconds span) {
  const auto ns = span.count();
  if (ns < 10'000) return {"ns", 1.0, 0};
  if (ns < 10'000'000) return {"us", 1e-3, 3};
  if (ns < 100'000'000'000) return {"ms", 1e-6, 3};
  return {"s", 1e-9, 3};
}

std::string time_text(nanoseconds time, const time_unit& unit) {
  return fmt::format("{:.{}f} {}", static_cast<double>(time.count()) * unit.per_ns, unit.decimals,
                     unit.name);
}

std::string share_text(nanoseconds part, nanoseconds whole) {
  if (whole.count() <= 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part.count()) /
                                    static_cast<double>(whole.count()));
}

const char* methods_text(timing_methods methods) {
  if (methods.mixed()) return "mixed";
  if (methods.device) return "device";
  if (methods.system) return "system";
  return "-";
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

struct row {
  std::string label;
  std::string launches;
  std::string self;
  std::string total;
  std::string share;
  std::string method;
};

class table {
 public:
  table(const pass_summary& summary, const tree_options& options)
      : summary_{summary},
        options_{options},
        unit_{unit_for(summary.window.count() > 0 ? summary.window : summary.kernel_time)},
        timed_{summary.timing != timing_request::none || summary.timed_launches > 0} {}

  void add_node(const summary_node& node, std::size_t depth, std::string label) {
    row r;
    r.label = std::string(2 * depth, ' ') + std::move(label);
    r.launches = launches_text(node);
    if (node.timed_launches > 0) {
      r.self = time_text(node.self, unit_);
      r.total = time_text(node.total, unit_);
      r.share = share_text(node.total, summary_.window);
    } else {
      // Assigned from a string, not a literal: g++ 12 misreports assigning a literal (-Wrestrict).
      const std::string none{"-"};
      r.self = none;
      r.total = none;
      r.share = none;
    }
    r.method = methods_text(node.methods);
    rows_.push_back(std::move(r));
    for (const auto& child : node.children) add_node(child, depth + 1, label_of(child));
  }

  std::string label_of(const summary_node& node) const {
    if (node.kind == summary_node::node_kind::kernel) {
      return format_kernel_name(node.name, options_.kernel_names);
    }
    return node.name.empty() ? "(unnamed scope)" : node.name;
  }

  void add_plain(std::string label, std::string launches, std::string total, std::string share) {
    row r;
    r.label = std::move(label);
    r.launches = std::move(launches);
    r.total = std::move(total);
    r.share = std::move(share);
    rows_.push_back(std::move(r));
  }

  void write(std::ostream& out) const {
    const row heading{"scope / kernel", "launches", "self", "total", "share", "method"};
    const bool method_column = summary_.methods.mixed();
    std::array<std::size_t, 6> width{};
    auto measure = [&](const row& r) {
      width[0] = std::max(width[0], r.label.size());
      width[1] = std::max(width[1], r.launches.size());
      width[2] = std::max(width[2], r.self.size());
      width[3] = std::max(width[3], r.total.size());
      width[4] = std::max(width[4], r.share.size());
      width[5] = std::max(width[5], r.method.size());
    };
    measure(heading);
    for (const auto& r : rows_) measure(r);
    auto print = [&](const row& r) {
      std::string line = fmt::format("{:<{}}  {:>{}}", r.label, width[0], r.launches, width[1]);
      if (timed_) {
        line += fmt::format("  {:>{}}  {:>{}}  {:>{}}", r.self, width[2], r.total, width[3],
                            r.share, width[4]);
      }
      if (method_column) line += fmt::format("  {:<{}}", r.method, width[5]);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << '\n';
    };
    print(heading);
    for (const auto& r : rows_) print(r);
  }

  const time_unit& unit() const { return unit_; }
  bool timed() const { return timed_; }

 private:
  std::string launches_text(const summary_node& node) const {
    // Dry runs are said wherever there are some: nothing ran, by design. Launches without time for
    // any other reason (captured, measurement lost) only in a pass that times launches.
    std::string notes;
    if (node.dry_run_launches > 0) notes = fmt::format("{} dry", node.dry_run_launches);
    const auto accounted = node.timed_launches + node.dry_run_launches;
    if (timed_ && node.launches > accounted) {
      notes += fmt::format("{}{} untimed", notes.empty() ? "" : ", ", node.launches - accounted);
    }
    if (notes.empty()) return std::to_string(node.launches);
    return fmt::format("{} ({})", node.launches, notes);
  }

  const pass_summary& summary_;
  const tree_options& options_;
  time_unit unit_;
  bool timed_;
  std::vector<row> rows_;
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

void write_header(std::ostream& out, const pass_summary& s, const table& t) {
  std::string first = fmt::format("launchwatch: {} from {} on {}", plural(s.launches, "launch", "launches"),
                                  plural(s.host_threads, "host thread", "host threads"),
                                  plural(s.streams.size(), "stream", "streams"));
  if (s.dry_run_launches > 0) {
    first += fmt::format("; {} dry-run (reported, not executed, no device time)", s.dry_run_launches);
  }
  if (s.captured_launches > 0) {
    first += fmt::format("; {} recorded into graphs", s.captured_launches);
  }
  out << first << '\n';

  out << timing_line(s) << '\n';

  if (s.window.count() > 0) {
    const auto streams = plural(s.streams.size(), "stream", "streams");
    const auto& m = s.measurements;
    const auto stamped = m.device_stamped + m.system_stamped;
    const auto lengths = m.device_lengths + m.system_lengths;
    if (lengths == 0) {
      out << fmt::format(
          "100% = {}: first kernel start to last kernel end on each stream, summed over {}\n",
          time_text(s.window, t.unit()), streams);
    } else if (stamped == 0) {
      out << fmt::format(
          "100% = {}: the lengths of {}, summed over {}; they have no place on a timeline, so "
          "idle time around them is unknown\n",
          time_text(s.window, t.unit()), plural(lengths, "kernel", "kernels"), streams);
    } else {
      // The window is the two parts added: say both, so neither reads as added to the 100%.
      out << fmt::format(
          "100% = {}: {} from first kernel start to last kernel end on each stream, summed over "
          "{}, and {} of kernels known only by length (idle time around them is unknown)\n",
          time_text(s.window, t.unit()), time_text(s.window - s.unplaced, t.unit()), streams,
          time_text(s.unplaced, t.unit()));
    }
  }

  const auto lost = s.lost.empty + s.lost.failed + s.lost.unpaired;
  if (lost > 0) {
    out << fmt::format(
        "lost: {} (empty {}, failed to read {}, unpaired {}); their launches have no time\n",
        plural(lost, "measurement", "measurements"), s.lost.empty, s.lost.failed,
        s.lost.unpaired);
  }
}

}  // namespace

void write_tree(std::ostream& out, const pass_summary& summary, const tree_options& options) {
  table t{summary, options};
  for (const auto& scope : summary.scopes) t.add_node(scope, 0, t.label_of(scope));
  if (summary.outside.launches > 0) {
    t.add_node(summary.outside, 0, "[outside any scope]");
  }
  if (summary.window.count() > 0) {
    const auto& m = summary.measurements;
    if (m.device_stamped + m.system_stamped == 0) {
      // Only lengths: no kernel has a place on a timeline, so there is no idle time to show, and a
      // zero would claim the device never waited.
      t.add_plain("[device idle: unknown, lengths only]", "", "-", "-");
    } else {
      t.add_plain("[device idle]", "", time_text(summary.idle, t.unit()),
                  share_text(summary.idle, summary.window));
    }
  }
  if (summary.overlap.count() > 0) {
    t.add_plain("[overlap, counted twice above]", "", time_text(-summary.overlap, t.unit()),
                share_text(-summary.overlap, summary.window));
  }
  t.add_plain("total", std::to_string(summary.launches),
              summary.window.count() > 0 ? time_text(summary.window, t.unit()) : "-",
              summary.window.count() > 0 ? "100.0%" : "-");

  write_header(out, summary, t);
  out << '\n';
  t.write(out);
}

std::string render_tree(const pass_summary& summary, const tree_options& options) {
  std::ostringstream out;
  write_tree(out, summary, options);
  return out.str();
}

}  // namespace launchwatch
