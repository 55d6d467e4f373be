// Renderers over run_results: the terminal tables and the JSON file.
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "results.hpp"

namespace launchwatch::peers {

namespace {

std::string_view side_name(side s) {
  switch (s) {
    case side::raw:
      return "raw";
    case side::launchwatch:
      return "launchwatch";
    case side::peer:
      return "peer";
  }
  return "?";
}

// Nanoseconds as microseconds for a table cell; a case that did not run shows a dash, never 0.
std::string us(double ns, int decimals = 2) {
  if (!std::isfinite(ns)) return "-";
  return fmt::format("{:.{}f}", ns / 1000.0, decimals);
}

std::string us_spread(const spread& s, int decimals = 2) {
  if (s.count == 0) return "-";
  return fmt::format("{} [{}-{}]", us(s.median, decimals), us(s.p10, decimals),
                     us(s.p90, decimals));
}

std::string times(const spread& s) {
  if (s.count == 0 || !std::isfinite(s.median)) return "-";
  return fmt::format("{:.2f}x [{:.2f}-{:.2f}]", s.median, s.p10, s.p90);
}

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return fmt::format("{:.1f}%", fraction * 100.0);
}

const launch_cost_case* find_cost(const run_results& r, std::string_view name) {
  for (const auto& c : r.launch_cost) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const perturbation_case* find_perturbation(const run_results& r, std::string_view name,
                                           double target) {
  for (const auto& c : r.perturbation) {
    if (c.name == name && c.kernel_target_ns == target) return &c;
  }
  return nullptr;
}

spread ratio_or_none(const std::vector<double>& numerator, const std::vector<double>& denominator) {
  if (numerator.empty() || numerator.size() != denominator.size()) return {};
  return ratio_per_round(numerator, denominator);
}

// JSON: numbers that are not finite become null, strings are escaped.
std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  return fmt::format("{:.6g}", value);
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string json_spread(const spread& s) {
  return fmt::format(R"({{"median": {}, "p10": {}, "p90": {}, "min": {}, "max": {}, "count": {}}})",
                     json_number(s.median), json_number(s.p10), json_number(s.p90),
                     json_number(s.min), json_number(s.max), s.count);
}

std::string json_series(const std::vector<double>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out += ", ";
    out += json_number(values[i]);
  }
  return out + "]";
}

std::string json_idle(const idle_summary& idle) {
  return fmt::format(R"({{"window_ns": {}, "busy_ns": {}, "idle_ns": {}, "kernels": {}}})",
                     idle.window_ns, idle.busy_ns, idle.idle_ns, idle.kernels);
}

// Appends one formatted line; the format string is checked at compile time.
template <class... Args>
void append_line(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  out += fmt::format(format, std::forward<Args>(args)...);
  out += '\n';
}

}  // namespace

std::string render_tables(const run_results& r) {
  std::string out;

  append_line(out, "launchwatch against its peers: {} ({} SMs), driver {}, runtime {}, CUPTI {}",
              r.device_name, r.multiprocessors, r.driver_version, r.runtime_version,
              r.cupti_version);
  append_line(out, "started {}; {} rounds, {} empty-kernel launches per batch; {:.1f} s",
              r.started_at, r.rounds, r.launches_per_batch, r.seconds);
  if (!r.notes.empty()) append_line(out, "notes: {}", r.notes);
  append_line(out, "");

  append_line(
      out,
      "1. Host cost per empty-kernel launch, µs (median [p10-p90] over rounds; x raw = median of");
  append_line(out,
              "   per-round ratios to the raw case of the same phase). issue: the launch calls; "
              "drain: sync +");
  append_line(out,
              "   resolving/flushing after the batch. Phase clean: CUPTI never called; phase "
              "cupti: each CUPTI");
  append_line(out,
              "   case detached (cuptiFinalize) after its batch, raw and launchwatch measured "
              "again beside them.");
  append_line(out, "{:<44} {:<12} {:>20} {:>20} {:>18} {:>20} {:>18} {:>14}", "method", "side",
              "issue", "x raw (issue)", "drain", "issue+drain", "x raw (total)", "delivered");
  std::string phase;
  for (const auto& c : r.launch_cost) {
    if (c.phase != phase) {
      phase = c.phase;
      append_line(out, "-- phase {}", phase);
    }
    const launch_cost_case* raw = find_cost(r, c.baseline);
    if (!c.skipped.empty()) {
      append_line(out, "{:<44} {:<12} skipped: {}", c.label, side_name(c.owner), c.skipped);
      continue;
    }
    const spread issue = summarize(c.issue_ns);
    const spread drain = summarize(c.drain_ns);
    const spread total = summarize(c.total_ns);
    const spread ratio_issue = raw ? ratio_or_none(c.issue_ns, raw->issue_ns) : spread{};
    const spread ratio_total = raw ? ratio_or_none(c.total_ns, raw->total_ns) : spread{};
    const std::string delivered =
        c.expected == 0 ? "-" : fmt::format("{}/{}", c.delivered, c.expected);
    append_line(out, "{:<44} {:<12} {:>20} {:>20} {:>18} {:>20} {:>18} {:>14}", c.label,
                side_name(c.owner), us_spread(issue), times(ratio_issue), us_spread(drain),
                us_spread(total), times(ratio_total), delivered);
  }
  append_line(out, "");

  append_line(out,
              "2. Isolation: raw launches, µs: clean phase / CUPTI phase, first in each round / "
              "CUPTI phase,");
  append_line(out,
              "   right after the CUPTI cases (CUPTI left behind in the process would show here).");
  append_line(out, "   clean: {}   cupti phase: {}   right after CUPTI: {}",
              us_spread(r.isolation.raw_before_cupti_ns), us_spread(r.isolation.raw_interleaved_ns),
              us_spread(r.isolation.raw_right_after_cupti_ns));
  append_line(out, "");

  append_line(
      out,
      "3. Spin-kernel calibration (back-to-back period over a pass, CUDA events around the pass)");
  append_line(out, "{:>12} {:>12} {:>14}", "target µs", "spin µs", "period µs");
  for (const auto& c : r.calibrations) {
    append_line(out, "{:>12} {:>12} {:>14}", us(c.target_ns), us(c.spin_ns),
                us(c.measured_period_ns));
  }
  append_line(out, "");

  append_line(out,
              "4. Device perturbation: pass wall time per kernel, µs, back-to-back kernels (median "
              "[p10-p90]);");
  append_line(out, "   x untimed = per-round ratio to the same runtime's untimed pass.");
  append_line(out, "{:>8} {:<44} {:<12} {:>22} {:>20} {:>20}", "kernel", "timing", "side",
              "per kernel", "x untimed", "x raw untimed");
  for (const auto& c : r.perturbation) {
    const std::string kernel = fmt::format("{} µs", us(c.kernel_target_ns, 0));
    if (!c.skipped.empty()) {
      append_line(out, "{:>8} {:<44} {:<12} skipped: {}", kernel, c.label, side_name(c.owner),
                  c.skipped);
      continue;
    }
    const perturbation_case* own = find_perturbation(r, c.untimed, c.kernel_target_ns);
    const perturbation_case* raw_untimed = find_perturbation(r, "raw", c.kernel_target_ns);
    const spread per = summarize(c.per_kernel_ns);
    const spread vs_own = own ? ratio_or_none(c.per_kernel_ns, own->per_kernel_ns) : spread{};
    const spread vs_raw =
        raw_untimed ? ratio_or_none(c.per_kernel_ns, raw_untimed->per_kernel_ns) : spread{};
    append_line(out, "{:>8} {:<44} {:<12} {:>22} {:>20} {:>20}", kernel, c.label,
                side_name(c.owner), us_spread(per), times(vs_own), times(vs_raw));
  }
  append_line(out, "");

  append_line(
      out,
      "5. Fidelity: per-kernel durations against CUPTI's activity records of the same kernels;");
  append_line(out,
              "   device idle time (window minus the union of kernel windows) from each side's "
              "timestamps.");
  append_line(out, "{:>6} {:<13} {:<21} {:>6} {:>9} {:>9} {:>9} {:>8} {:>8} {:>10} {:>10} {:>8}",
              "kernel", "regime", "method", "pairs", "CUPTI µs", "method µs", "bias ns", "med err",
              "p99 err", "CUPTI idle", "meth. idle", "idle err");
  for (const auto& f : r.fidelity) {
    if (!f.skipped.empty()) {
      append_line(out, "{:>6} {:<13} {:<21} skipped: {}", f.kernel, f.regime, f.method, f.skipped);
      continue;
    }
    const double cupti_idle = static_cast<double>(f.cupti_idle.idle_ns);
    const double method_idle = static_cast<double>(f.method_idle.idle_ns);
    const double idle_error =
        cupti_idle > 0 ? (method_idle - cupti_idle) / cupti_idle : std::nan("");
    append_line(
        out, "{:>6} {:<13} {:<21} {:>6} {:>9} {:>9} {:>9.0f} {:>8} {:>8} {:>10} {:>10} {:>8}",
        f.kernel, f.regime, f.method, f.durations.pairs, us(f.durations.median_reference_ns, 3),
        us(f.durations.median_measured_ns, 3), f.durations.median_signed_error_ns,
        percent(f.durations.median_relative_error), percent(f.durations.p99_relative_error),
        us(cupti_idle, 0), us(method_idle, 0), percent(idle_error));
  }
  append_line(out, "");
  append_line(out,
              "6. Kernel length on the device as CUPTI records it, µs (median; device-bound "
              "passes): the same");
  append_line(
      out,
      "   body launched raw, through launchwatch untimed, and with launchwatch's deferred timing.");
  append_line(out, "{:>6} {:>10} {:>18} {:>16} {:>20}", "kernel", "raw", "launchwatch untimed",
              "launchwatch timed", "added by timing");
  for (const auto& i : r.instrumentation) {
    append_line(out, "{:>6} {:>10} {:>18} {:>16} {:>20}", i.kernel, us(i.raw_ns, 3),
                us(i.launchwatch_untimed_ns, 3), us(i.launchwatch_timed_ns, 3),
                us(i.launchwatch_timed_ns - i.launchwatch_untimed_ns, 3));
  }
  return out;
}

std::string render_json(const run_results& r) {
  std::string out = "{\n";
  out += fmt::format(
      R"(  "device": {{"name": {}, "multiprocessors": {}, "driver": {}, "runtime": {}, "cupti": {}}},)",
      json_string(r.device_name), r.multiprocessors, json_string(r.driver_version),
      json_string(r.runtime_version), json_string(r.cupti_version));
  out += "\n";
  out += fmt::format(
      R"(  "run": {{"started_at": {}, "rounds": {}, "launches_per_batch": {}, "seconds": {}, "notes": {}}},)",
      json_string(r.started_at), r.rounds, r.launches_per_batch, json_number(r.seconds),
      json_string(r.notes));
  out += "\n";

  out += "  \"launch_cost\": [\n";
  for (std::size_t i = 0; i < r.launch_cost.size(); ++i) {
    const auto& c = r.launch_cost[i];
    const launch_cost_case* raw = find_cost(r, c.baseline);
    const spread ratio_issue = raw ? ratio_or_none(c.issue_ns, raw->issue_ns) : spread{};
    const spread ratio_total = raw ? ratio_or_none(c.total_ns, raw->total_ns) : spread{};
    out += fmt::format(
        R"(    {{"name": {}, "label": {}, "side": {}, "phase": {}, "baseline": {}, "skipped": {}, )"
        R"("issue_ns": {}, "drain_ns": {}, )"
        R"("total_ns": {}, "issue_ratio_to_raw": {}, "total_ratio_to_raw": {}, "expected": {}, )"
        R"("delivered": {}, "issue_ns_rounds": {}, "total_ns_rounds": {}}})",
        json_string(c.name), json_string(c.label), json_string(side_name(c.owner)),
        json_string(c.phase), json_string(c.baseline),
        c.skipped.empty() ? "null" : json_string(c.skipped), json_spread(summarize(c.issue_ns)),
        json_spread(summarize(c.drain_ns)), json_spread(summarize(c.total_ns)),
        json_spread(ratio_issue), json_spread(ratio_total), c.expected, c.delivered,
        json_series(c.issue_ns), json_series(c.total_ns));
    out += i + 1 < r.launch_cost.size() ? ",\n" : "\n";
  }
  out += "  ],\n";

  out += fmt::format(
      R"(  "isolation": {{"raw_before_cupti_ns": {}, "raw_interleaved_ns": {}, "raw_right_after_cupti_ns": {}}},)",
      json_spread(r.isolation.raw_before_cupti_ns), json_spread(r.isolation.raw_interleaved_ns),
      json_spread(r.isolation.raw_right_after_cupti_ns));
  out += "\n";

  out += "  \"calibration\": [\n";
  for (std::size_t i = 0; i < r.calibrations.size(); ++i) {
    const auto& c = r.calibrations[i];
    out += fmt::format(R"(    {{"target_ns": {}, "spin_ns": {}, "measured_period_ns": {}}})",
                       json_number(c.target_ns), json_number(c.spin_ns),
                       json_number(c.measured_period_ns));
    out += i + 1 < r.calibrations.size() ? ",\n" : "\n";
  }
  out += "  ],\n";

  out += "  \"perturbation\": [\n";
  for (std::size_t i = 0; i < r.perturbation.size(); ++i) {
    const auto& c = r.perturbation[i];
    const perturbation_case* own = find_perturbation(r, c.untimed, c.kernel_target_ns);
    const perturbation_case* raw_untimed = find_perturbation(r, "raw", c.kernel_target_ns);
    out += fmt::format(
        R"(    {{"name": {}, "label": {}, "side": {}, "skipped": {}, "kernel_target_ns": {}, )"
        R"("kernels_per_pass": {}, "per_kernel_ns": {}, "ratio_to_untimed": {}, )"
        R"("ratio_to_raw_untimed": {}}})",
        json_string(c.name), json_string(c.label), json_string(side_name(c.owner)),
        c.skipped.empty() ? "null" : json_string(c.skipped), json_number(c.kernel_target_ns),
        c.kernels_per_pass, json_spread(summarize(c.per_kernel_ns)),
        json_spread(own ? ratio_or_none(c.per_kernel_ns, own->per_kernel_ns) : spread{}),
        json_spread(raw_untimed ? ratio_or_none(c.per_kernel_ns, raw_untimed->per_kernel_ns)
                                : spread{}));
    out += i + 1 < r.perturbation.size() ? ",\n" : "\n";
  }
  out += "  ],\n";

  out += "  \"fidelity\": [\n";
  for (std::size_t i = 0; i < r.fidelity.size(); ++i) {
    const auto& f = r.fidelity[i];
    out += fmt::format(
        R"(    {{"kernel": {}, "regime": {}, "method": {}, "skipped": {}, "passes": {}, "pairs": {}, )"
        R"("median_relative_error": {}, "p99_relative_error": {}, "median_signed_error_ns": {}, )"
        R"("median_method_ns": {}, "median_cupti_ns": {}, "method_idle": {}, "cupti_idle": {}}})",
        json_string(f.kernel), json_string(f.regime), json_string(f.method),
        f.skipped.empty() ? "null" : json_string(f.skipped), f.passes, f.durations.pairs,
        json_number(f.durations.median_relative_error), json_number(f.durations.p99_relative_error),
        json_number(f.durations.median_signed_error_ns),
        json_number(f.durations.median_measured_ns), json_number(f.durations.median_reference_ns),
        json_idle(f.method_idle), json_idle(f.cupti_idle));
    out += i + 1 < r.fidelity.size() ? ",\n" : "\n";
  }
  out += "  ],\n";

  out += "  \"instrumentation\": [\n";
  for (std::size_t i = 0; i < r.instrumentation.size(); ++i) {
    const auto& c = r.instrumentation[i];
    out += fmt::format(
        R"(    {{"kernel": {}, "raw_ns": {}, "launchwatch_untimed_ns": {}, "launchwatch_timed_ns": {}}})",
        json_string(c.kernel), json_number(c.raw_ns), json_number(c.launchwatch_untimed_ns),
        json_number(c.launchwatch_timed_ns));
    out += i + 1 < r.instrumentation.size() ? ",\n" : "\n";
  }
  out += "  ]\n}\n";
  return out;
}

}  // namespace launchwatch::peers
