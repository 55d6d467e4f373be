// `launchwatch run [--out DIR] [--timing ...] [--capture-range ...] [--unscoped ...] -- PROGRAM [ARGS...]`: runs an
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
  std::string timing = "deferred";
  std::string capture_range = "none";
  std::string unscoped = "sole-scoped-thread";
  std::vector<std::string> command;  // PROGRAM and its arguments
};

/// Adds the `run` subcommand to `app`, parsing into `options`.
CLI::App* add_run_command(CLI::App& app, run_options& options);

/// Runs the program and prints its report; returns the program's exit status (128 + n when signal
/// n ended it; 127 when it could not be started). SIGINT, SIGTERM and SIGHUP sent to launchwatch
/// by another process are passed on to the program (one from the terminal reaches it directly).
/// Throws std::runtime_error for an output folder it cannot prepare.
int run_program(const run_options& options);

}  // namespace launchwatch::cli
