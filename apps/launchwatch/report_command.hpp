// `launchwatch report [FILE | -] [--kernels] [--diff BASE NEW] [--merge FILE...] [--format ...] ...`:
// prints a saved summary.json as the tree, the kernel table, a comparison of two, or one report of
// a job's processes, as a table for people, CSV or JSON.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace launchwatch::cli {

struct report_options {
  std::string summary;  // a summary.json, or `-` for standard input
  std::vector<std::string> merge;
  std::vector<std::string> diff;
  bool kernels = false;
  std::string names = "balanced";
  std::string format = "table";
  std::size_t depth = 0;
  std::string sort = "issue";
  std::string idle = "device";
  std::optional<double> fail_above;
  std::string fail_on;  // empty: not given (any)
};

/// The exit status when a row grew past --fail-above: distinct from errors (1) and the demo's
/// numerics mismatch (3), so a CI can tell a regression from a broken run.
inline constexpr int grew_past_threshold = 4;

/// Adds the `report` subcommand to `app`, parsing into `options`.
CLI::App* add_report_command(CLI::App& app, report_options& options);

/// Prints the report `options` asks for; returns 0, or grew_past_threshold when a --diff row grew
/// past --fail-above. Throws launchwatch::summary_error for a summary it cannot read (nothing is
/// printed on standard output then).
int run_report(const report_options& options);

}  // namespace launchwatch::cli
