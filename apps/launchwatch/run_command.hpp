// `launchwatch run [--out DIR] [--force] [--timing ...] [--capture-range ...] [--unscoped ...]
// [--trace-events N] [--snapshot-every SECONDS] -- PROGRAM [ARGS...]`: runs an
// unmodified program with launchwatch's injection library loaded into it (CUDA_INJECTION64_PATH,
// NVTX_INJECTION64_PATH), then prints the report the injection left in DIR.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace launchwatch::cli {

struct run_options {
  std::filesystem::path out = "launchwatch-run";
  bool force = false;  // write into an unstamped, non-empty --out
  std::string timing = "deferred";
  std::string capture_range = "none";
  std::string unscoped = "sole-scoped-thread";
  /// At most this many trace events in trace.json, the pass's beginning; 0 = no cap. Negative is
  /// refused by the parser.
  long long trace_events = 1'000'000;
  /// Seconds between rewrites of summary.json while the program runs; 0 = only at exit.
  long long snapshot_every = 0;
  /// --torch: auto (modules for a Python program), modules, ops or off.
  std::string torch = "auto";
  std::vector<std::string> command;  // PROGRAM and its arguments
};

/// The --torch mode `run` uses for `program`: `torch` itself unless it is auto, which is modules
/// for a Python program (its name starts with `python`, or it is a script whose shebang line
/// runs Python) and off for any other. Thread safety: a pure function of the file system.
std::string torch_mode_for(const std::string& torch, const std::string& program);

/// Adds the `run` subcommand to `app`, parsing into `options`.
CLI::App* add_run_command(CLI::App& app, run_options& options);

/// Runs the program and prints its report; returns the program's exit status (128 + n when signal
/// n ended it; 127 when it was not found, 126 when it could not be run). The program runs in a
/// process group of its own (the terminal's foreground one, when launchwatch has the terminal):
/// SIGINT, SIGTERM and SIGHUP sent to launchwatch go to that whole group, and a second one ends the
/// group at once. Throws std::runtime_error, before the program starts, for an output folder it
/// cannot write or must not write into (output_folder.hpp).
int run_program(const run_options& options);

}  // namespace launchwatch::cli
