// `launchwatch report`: a saved summary as the tree, the kernel table, a comparison or a merged
// report, in the format asked for. The report is written whole only once every summary it needs has
// been read, so an error leaves standard output empty.

#include "report_command.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include <launchwatch/report/diff.hpp>
#include <launchwatch/report/kernel_table.hpp>
#include <launchwatch/report/merge.hpp>
#include <launchwatch/report/report_writer.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/summary_json.hpp>
#include <launchwatch/report/tree.hpp>

namespace launchwatch::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* standard_input = "-";

/// The summary named on the command line: a file, or standard input for `-`.
pass_summary load(const std::string& name) {
  if (name == standard_input) return read_summary_json(std::cin, "standard input");
  std::error_code error;
  if (fs::is_directory(name, error)) {
    throw summary_error{"cannot read the summary " + name +
                        ": it is a directory. Pass the path of a summary.json that launchwatch wrote "
                        "(such as " + (fs::path{name} / "summary.json").string() + ")."};
  }
  return load_summary(name);
}

/// Refuses a file given twice (however spelled: `a.json`, `./a.json`, a link to it).
void refuse_repeats(const std::vector<std::string>& files) {
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (std::size_t j = i + 1; j < files.size(); ++j) {
      if (files[i] == standard_input || files[j] == standard_input) continue;
      std::error_code error;
      if (fs::equivalent(files[i], files[j], error)) {
        throw summary_error{fmt::format(
            "--merge: {} and {} are the same file; give each process's summary once", files[i],
            files[j] == files[i] ? "it again" : files[j])};
      }
    }
  }
}

/// The summaries of several processes of one job, each labelled by the rank it recorded, else by
/// its file (or `file N` where that is taken), so no label collides with a recorded one.
pass_summary merged_summary(const std::vector<std::string>& files) {
  refuse_repeats(files);
  std::vector<process_summary> processes;
  std::set<std::string> recorded;
  for (const auto& file : files) {
    auto summary = load(file);
    if (!summary.process.empty()) recorded.insert(summary.process);
    processes.push_back({summary.process, std::move(summary)});
  }
  std::set<std::string> given;
  for (std::size_t i = 0; i < processes.size(); ++i) {
    auto& label = processes[i].label;
    if (!label.empty()) continue;
    label = files[i] == standard_input ? "standard input" : files[i];
    for (std::size_t n = i + 1; recorded.contains(label) || given.contains(label); ++n) {
      label = fmt::format("file {}", n);
    }
    given.insert(label);
  }
  return merge_summaries(processes);
}

report_format format_of(const std::string& name) {
  if (name == "csv") return report_format::csv;
  if (name == "json") return report_format::json;
  return report_format::table;
}

name_format names_of(const std::string& name) {
  if (name == "full") return name_format::full;
  if (name == "brief") return name_format::brief;
  return name_format::balanced;
}

growth_gate gate_of(const std::string& name) {
  if (name == "count") return growth_gate::count;
  if (name == "time") return growth_gate::time;
  return growth_gate::any;
}

/// Checks a --fail-above value: a finite number of 0 or more. CLI11's own check lets `nan` through
/// (every comparison with it is false, so the gate would never trip) and spells out DBL_MAX.
std::string check_percent(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size()) {
    return fmt::format("expected a percentage such as 10 (a number of 0 or more), found '{}'", text);
  }
  if (!std::isfinite(value) || errno == ERANGE) {
    return fmt::format("'{}' is not a usable threshold: give a finite percentage such as 10", text);
  }
  if (value < 0) {
    return fmt::format("{} is negative: give a percentage of 0 or more (0 fails on any growth)", text);
  }
  return {};
}

int run_diff(const report_options& options, std::ostream& out) {
  const auto base = load(options.diff.at(0));
  const auto current = load(options.diff.at(1));
  const auto diff = diff_summaries(base, current);
  diff_options shown;
  shown.kernel_names = names_of(options.names);
  shown.format = format_of(options.format);
  shown.fail_above = options.fail_above;
  if (!options.fail_on.empty()) {
    shown.fail_on = gate_of(options.fail_on);
    if (!shown.fail_above) shown.fail_above = 0.0;  // --fail-on alone: any growth fails
  }
  if (shown.format == report_format::table) {
    out << fmt::format("launchwatch diff: {} (base) -> {} (new)\n\n", options.diff[0], options.diff[1]);
  }
  make_diff_writer(shown)->write(out, diff);
  return any_grew_past(diff, shown) ? grew_past_threshold : 0;
}

/// The writer of a summary's view (`--kernels`, else the tree) in the `--format` asked for.
std::unique_ptr<report_writer<pass_summary>> summary_writer(const report_options& options) {
  if (options.kernels) {
    kernel_table_options kernels;
    kernels.kernel_names = names_of(options.names);
    kernels.format = format_of(options.format);
    return make_kernel_table_writer(kernels);
  }
  tree_options tree;
  tree.kernel_names = names_of(options.names);
  tree.order = options.sort == "time" ? tree_order::time : tree_order::issue;
  tree.accounting = options.idle == "stream" ? idle_accounting::stream : idle_accounting::device;
  tree.depth = options.depth;
  tree.format = format_of(options.format);
  return make_tree_writer(tree);
}

int print_report(const report_options& options, std::ostream& out) {
  if (!options.diff.empty()) return run_diff(options, out);
  const auto summary =
      options.merge.empty() ? load(options.summary) : merged_summary(options.merge);
  if (!options.merge.empty() && format_of(options.format) == report_format::table) {
    out << fmt::format("launchwatch: {} processes merged\n\n", options.merge.size());
  }
  summary_writer(options)->write(out, summary);
  return 0;
}

}  // namespace

CLI::App* add_report_command(CLI::App& app, report_options& options) {
  auto* report = app.add_subcommand("report", "Print the report of a saved summary.json");
  // No ExistingFile checks: `-` is standard input, and a file that cannot be read is said by the
  // summary reader (exit 1), with the reason.
  auto* summary_option = report->add_option(
      "summary", options.summary, "A summary.json written by launchwatch (`-`: read it from standard input)");
  auto* diff_option =
      report
          ->add_option("--diff", options.diff,
                       "BASE.json NEW.json: print per scope and kernel the change in launches and "
                       "device time from BASE to NEW")
          ->expected(2)
          ->excludes(summary_option);
  auto* merge_option =
      report
          ->add_option("--merge", options.merge,
                       "RANK0.json RANK1.json ...: print one report of a job's processes, each a "
                       "top-level row (labelled by the rank it recorded, else by its file)")
          ->expected(2, -1)
          ->excludes(summary_option)
          ->excludes(diff_option);
  auto* kernels_option =
      report
          ->add_flag("--kernels", options.kernels,
                     "Print one row per kernel over every scope it ran in (count, total, avg, min, "
                     "max, share of kernel time), hottest first")
          ->excludes(diff_option);
  report->add_option("--names", options.names, "How kernel names are shortened: full, balanced or brief")
      ->check(CLI::IsMember({"full", "balanced", "brief"}))
      ->capture_default_str();
  report->add_option("--format", options.format,
                     "table (for people), csv (RFC 4180; integer nanoseconds, shares as fractions) "
                     "or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  report->add_option("--depth", options.depth,
                     "Show N levels of the tree (1: top-level rows only); deeper rows are folded "
                     "into their ancestor, whose total stays whole (default: all)")
      ->check(CLI::PositiveNumber)
      ->excludes(diff_option)
      ->excludes(kernels_option);
  report
      ->add_option("--fail-above", options.fail_above,
                   "With --diff: exit 4 when any row grew by more than PERCENT (launches or device "
                   "time, as --fail-on says; a new row always counts)")
      ->check(CLI::Validator{check_percent, "PERCENT", "a finite percentage of 0 or more"})
      ->needs(diff_option);
  report
      ->add_option("--fail-on", options.fail_on,
                   "With --diff: what --fail-above looks at: any (launches or device time), count "
                   "(launch counts only: exact between runs) or time (device time only); alone, "
                   "it fails on any growth (a threshold of 0)")
      ->check(CLI::IsMember({"any", "count", "time"}))
      ->needs(diff_option);
  report->add_option("--sort", options.sort,
                     "issue (rows in the order the program ran them) or time (hottest first, at "
                     "every level)")
      ->check(CLI::IsMember({"issue", "time"}))
      ->capture_default_str();
  report->add_option("--idle", options.idle,
                     "device (100% is each device's window, its streams united) or stream (each "
                     "stream's window, summed)")
      ->check(CLI::IsMember({"device", "stream"}))
      ->capture_default_str();
  report->callback([&options] {
    if (options.diff.empty() && options.summary.empty() && options.merge.empty()) {
      throw CLI::RequiredError{
          "a summary.json to print (- for standard input), --diff BASE.json NEW.json, or --merge "
          "RANK0.json RANK1.json ..."};
    }
  });
  return report;
}

int run_report(const report_options& options) {
  std::ostringstream out;
  const int status = print_report(options, out);
  std::cout << out.str() << std::flush;
  return status;
}

}  // namespace launchwatch::cli
