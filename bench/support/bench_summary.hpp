// The summary a benchmark prints after its table: each row's time per call, then ratios between
// rows, all taken from the one run that printed the table.
//
// Shared by the CPU benchmarks (bench/core, bench/runtime, bench/attribute) so that every summary
// takes its numbers the same way: the median the library computed when --benchmark_repetitions is
// given, otherwise the median of the runs seen. Collecting is kept apart from printing: a
// run_collector holds plain numbers, print_rows and print_ratios render them, and summary_reporter
// joins the two behind the console table.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace launchwatch::bench {

/// Which of a run's two times a row is summarised by.
enum class time_basis {
  /// CPU time, for every row: on a machine shared with other work, wall time also counts the time
  /// a thread waited for a core.
  cpu,
  /// Wall time for rows registered with UseRealTime() or UseManualTime(), CPU time for the others,
  /// so that a row's registration says what it is timed by.
  as_registered,
};

/// Gathers, for each benchmark row (its name as registered and its thread count), the time per
/// call and the user counters, from the runs a reporter is handed.
///
/// Plain data for the printers below; nothing is printed here. Not thread-safe: the library calls
/// its reporter from the thread that runs the benchmarks, one benchmark at a time.
class run_collector {
 public:
  using run = benchmark::BenchmarkReporter::Run;

  explicit run_collector(time_basis basis = time_basis::cpu) : basis_{basis} {}

  /// Takes one benchmark's runs as a reporter's ReportRuns receives them: each repetition, then
  /// the aggregates over them. Runs the library reports with an error are taken like the others.
  void add(const std::vector<run>& runs) {
    for (const auto& r : runs) {
      const key k{r.run_name.function_name, r.threads};
      const bool wall = basis_ == time_basis::as_registered && !r.run_name.time_type.empty();
      const double seconds = wall ? r.GetAdjustedRealTime() : r.GetAdjustedCPUTime();
      const double ns = seconds * 1e9 / benchmark::GetTimeUnitMultiplier(r.time_unit);
      if (r.run_type == run::RT_Aggregate) {
        if (r.aggregate_name == "median") {
          medians_[k] = ns;
          for (const auto& [name, c] : r.counters) counters_[k][name] = c.value;
        }
      } else {
        samples_[k].push_back(ns);
        // A repetition's counters stand in until the median's arrive, and never replace them.
        if (medians_.count(k) == 0) {
          for (const auto& [name, c] : r.counters) counters_[k][name] = c.value;
        }
      }
    }
  }

  /// The row's time per call in nanoseconds: the median the library computed, or (without
  /// repetitions) the median of the runs seen; nothing when the row did not run (filtered out).
  [[nodiscard]] std::optional<double> ns_per_call(std::string_view name,
                                                  std::int64_t threads = 1) const {
    const key k{std::string{name}, threads};
    if (const auto found = medians_.find(k); found != medians_.end()) return found->second;
    const auto found = samples_.find(k);
    if (found == samples_.end() || found->second.empty()) return std::nullopt;
    auto sorted = found->second;
    std::sort(sorted.begin(), sorted.end());
    const auto n = sorted.size();
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  /// The row's user counter `counter_name`: the median's where the library computed one, otherwise
  /// the last run's; nothing when the row did not run or does not count it.
  [[nodiscard]] std::optional<double> counter(std::string_view name, std::int64_t threads,
                                              std::string_view counter_name) const {
    const auto row = counters_.find(key{std::string{name}, threads});
    if (row == counters_.end()) return std::nullopt;
    const auto found = row->second.find(counter_name);
    if (found == row->second.end()) return std::nullopt;
    return found->second;
  }

 private:
  using key = std::pair<std::string, std::int64_t>;

  time_basis basis_;
  std::map<key, double> medians_;
  std::map<key, std::vector<double>> samples_;
  std::map<key, std::map<std::string, double, std::less<>>> counters_;
};

/// A row of the summary: a benchmark (its name as registered and its thread count) and the label
/// it is printed under.
struct summary_row {
  std::string_view name;
  std::int64_t threads;
  std::string_view label;
};

/// A ratio printed in the summary: the time per call of one row over another's.
struct summary_ratio {
  std::string_view label;
  std::string_view over;
  std::int64_t over_threads;
  std::string_view under;
  std::int64_t under_threads;
};

/// How print_rows lays out a row: `indent` spaces, the label padded to `label_width`, then the
/// time as `%<time_width>.<time_precision>f ns`, then the optional columns below.
struct row_layout {
  int indent = 2;
  int label_width = 46;
  int time_width = 8;
  int time_precision = 3;
  /// A user counter printed after the time as `%8.2f <counter_unit>`, on the rows that count it;
  /// none when empty.
  std::string_view counter{};
  std::string_view counter_unit{};
  /// A row (one thread) every row's time is divided by, printed as `%6.2fx <baseline_label>`
  /// when the baseline ran and took time; none when empty.
  std::string_view baseline{};
  std::string_view baseline_label{};
};

/// Writes printf-formatted text to `out`, however long it is.
template <class... Args>
void print(std::ostream& out, const char* format, Args... args) {
  const int size = std::snprintf(nullptr, 0, format, args...);
  if (size <= 0) return;
  std::string line(static_cast<std::size_t>(size) + 1, '\0');
  std::snprintf(line.data(), line.size(), format, args...);
  line.pop_back();
  out << line;
}

/// Prints each of `rows` that ran, one a line, laid out by `layout`; rows that did not run
/// (filtered out) are left out.
inline void print_rows(std::ostream& out, const run_collector& runs,
                       std::span<const summary_row> rows, const row_layout& layout) {
  const auto baseline = layout.baseline.empty() ? std::nullopt : runs.ns_per_call(layout.baseline);
  for (const auto& row : rows) {
    const auto ns = runs.ns_per_call(row.name, row.threads);
    if (!ns) continue;
    out << std::string(static_cast<std::size_t>(layout.indent), ' ');
    print(out, "%-*.*s %*.*f ns", layout.label_width, static_cast<int>(row.label.size()),
          row.label.data(), layout.time_width, layout.time_precision, *ns);
    if (!layout.counter.empty()) {
      if (const auto value = runs.counter(row.name, row.threads, layout.counter)) {
        print(out, "  %8.2f %.*s", *value, static_cast<int>(layout.counter_unit.size()),
              layout.counter_unit.data());
      }
    }
    if (baseline && *baseline > 0) {
      print(out, "  %6.2fx %.*s", *ns / *baseline, static_cast<int>(layout.baseline_label.size()),
            layout.baseline_label.data());
    }
    out << '\n';
  }
}

/// Prints each of `ratios` as `over / under` and the difference in nanoseconds, one a line, the
/// label padded to `label_width`; a ratio is left out when either row did not run, or the row
/// under it took no time.
inline void print_ratios(std::ostream& out, const run_collector& runs,
                         std::span<const summary_ratio> ratios, int label_width) {
  for (const auto& r : ratios) {
    const auto a = runs.ns_per_call(r.over, r.over_threads);
    const auto b = runs.ns_per_call(r.under, r.under_threads);
    if (!a || !b || *b <= 0) continue;
    print(out, "  %-*.*s %8.2fx  (%+.3f ns)\n", label_width, static_cast<int>(r.label.size()),
          r.label.data(), *a / *b, *a - *b);
  }
}

/// The console table, then a summary that `print_summary` writes from what the run measured.
///
/// The summary comes after the whole table, once every row has run, so that it can compare any two
/// of them. Give it to benchmark::RunSpecifiedBenchmarks as the display reporter; the library calls
/// it from the thread that runs the benchmarks.
class summary_reporter final : public benchmark::ConsoleReporter {
 public:
  using summary = std::function<void(std::ostream&, const run_collector&)>;

  explicit summary_reporter(summary print_summary, time_basis basis = time_basis::cpu)
      : ConsoleReporter{OO_Tabular}, runs_{basis}, print_summary_{std::move(print_summary)} {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    runs_.add(runs);
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    auto& out = GetOutputStream();
    print_summary_(out, runs_);
    out.flush();
  }

 private:
  run_collector runs_;
  summary print_summary_;
};

}  // namespace launchwatch::bench
