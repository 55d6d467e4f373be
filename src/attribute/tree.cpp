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

const char* request_text(timing_request timing) {
  switch (timing) {
    case timing_request::none:
      return "none";
    case timing_request::resolved:
      return "resolved";
    case timing_request::deferred:
      return "deferred";
  }
  return "none";
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
    r.launches = launches_text(node.launches, node.timed_launches);
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
  std::string launches_text(std::size_t launches, std::size_t timed) const {
    // Said only where some launch of the row has no time, in a pass that times launches.
    if (!timed_ || launches == timed) return std::to_string(launches);
    return fmt::format("{} ({} untimed)", launches, launches - timed);
  }

  const pass_summary& summary_;
  const tree_options& options_;
  time_unit unit_;
  bool timed_;
  std::vector<row> rows_;
};

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

  const char* request = request_text(s.timing);
  if (s.timed_launches == 0) {
    if (s.timing == timing_request::none) {
      out << "timing: not requested (timing_request::none): launches are counted, not timed\n";
    } else {
      out << "timing: requested (" << request << "), but no launch has a measurement\n";
    }
  } else if (s.methods.mixed()) {
    out << "timing: MIXED (" << request
        << "): device timestamps and host wall time are added together below; the method "
           "column says which each row holds\n";
  } else if (s.methods.device) {
    out << "timing: device (" << request
        << "): each kernel's start and end stamped by the device on one clock\n";
  } else {
    out << "timing: system (" << request
        << "): host wall time around each blocking submit, submission and waiting included\n";
  }

  if (s.window.count() > 0) {
    std::string window = fmt::format(
        "100% = {}: first kernel start to last kernel end on each stream, summed over {}",
        time_text(s.window, t.unit()), plural(s.streams.size(), "stream", "streams"));
    if (s.unplaced.count() > 0) {
      window += fmt::format(", plus {} of kernels known only by length (idle time around them is "
                            "unknown)",
                            time_text(s.unplaced, t.unit()));
    }
    out << window << '\n';
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
    t.add_plain("[device idle]", "", time_text(summary.idle, t.unit()),
                share_text(summary.idle, summary.window));
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
