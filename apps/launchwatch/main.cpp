// `launchwatch`: the command-line program. `demo` runs a small transformer under an attribution
// observer and writes its report and trace files; `run` watches another program's CUDA kernels and
// NVTX ranges; `report` renders a saved summary.

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/config.hpp>
#include <launchwatch/report/chrome_trace.hpp>
#include <launchwatch/report/merge.hpp>
#include <launchwatch/report/report_files.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/tree.hpp>
#include <launchwatch/runtime/client.hpp>

#include "forward.hpp"
#include "output_folder.hpp"
#include "report_command.hpp"
#include "report_paths.hpp"
#include "run_command.hpp"
#include "transformer.hpp"

namespace {

namespace fs = std::filesystem;
using namespace launchwatch;

struct demo_options {
  std::string backend = "cpu";
  int device = 0;
  demo::transformer_config model;
  int passes = 3;
  std::string timing = "deferred";
  fs::path out = "launchwatch-demo";
  bool force = false;
  bool progress = true;
  long long trace_events = 0;
};

timing_request parse_timing(const std::string& timing) {
  if (timing == "none") return timing_request::none;
  if (timing == "resolved") return timing_request::resolved;
  return timing_request::deferred;
}

/// Shows which pass is running when stderr is a terminal; says nothing otherwise (logs stay clean).
class progress_line {
 public:
  progress_line(bool wanted, int total) : shown_{wanted && ::isatty(STDERR_FILENO) != 0}, total_{total} {}
  void pass(int done) {
    if (shown_) std::fprintf(stderr, "\r  pass %d/%d", done, total_);
  }
  ~progress_line() {
    if (shown_) std::fprintf(stderr, "\r%*s\r", 24, "");
  }
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;

 private:
  bool shown_;
  int total_;
};

int run_demo(const demo_options& options) {
  options.model.validate();
  auto device = options.backend == "cuda"     ? client::cuda(options.device)
                : options.backend == "hip"    ? client::hip(options.device)
                : options.backend == "vulkan" ? client::vulkan(options.device)
                                              : client::cpu(options.device);
  // Before the work: a folder that cannot take the report, or holds files launchwatch did not
  // write, is refused now. The earlier run's files there stay as they are until the new ones are
  // whole (report_files), so a run cut short (Ctrl-C, a numerics mismatch) loses none of them.
  report_files files{cli::claim_output_folder(options.out, options.force).path};

  const auto& model = options.model;
  std::cout << fmt::format(
      "launchwatch demo: {} layers, {} tokens, width {}, {} heads, MLP {} on {} ({})\n", model.layers,
      model.tokens, model.width, model.heads, model.hidden, device.backend(), device.device_name());

  const auto weights = demo::make_weights(model);
  const auto tokens = demo::make_tokens(model);
  demo::transformer_runner runner{device, model, weights, tokens};

  // A warm-up pass, unobserved: first launches pay one-time costs (module loads, pool start-up)
  // that are not the model's. Its result is checked against the plain host reference.
  runner.forward();
  const auto got = runner.output();
  const auto want = demo::reference_forward(model, weights, tokens);
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  constexpr double tolerance = 1e-3;
  std::cout << fmt::format("numerics: max |kernel - reference| = {:.2e} ({})\n", worst,
                           worst <= tolerance ? "ok" : "MISMATCH");
  if (!(worst <= tolerance)) {
    std::cerr << fmt::format("launchwatch demo: the kernels disagree with the reference by {:.2e} (tolerance {:.0e})\n",
                             worst, tolerance);
    return 3;
  }

  attribution_options watch;
  watch.timing = parse_timing(options.timing);
  auto pass = attribute_pass(
      [&] {
        progress_line progress{options.progress, options.passes};
        for (int p = 1; p <= options.passes; ++p) {
          runner.forward();
          device.sync();
          progress.pass(p);
        }
      },
      watch);
  auto summary = summarize(pass);
  summary.process = process_label_from_environment();

  std::cout << fmt::format("\n{} passes, {} launches:\n\n", options.passes, pass.launches.size());
  write_tree(std::cout, summary);
  trace_options trace;
  trace.max_events = static_cast<std::size_t>(options.trace_events);
  trace_stats written;
  try {
    written = files.write(pass, summary, trace);
  } catch (const std::runtime_error& failure) {
    throw std::runtime_error{fmt::format(
        "{}. The report above is complete; free space there or choose another folder with --out, "
        "and run the demo again for the files.",
        failure.what())};
  }
  if (written.dropped > 0) {
    std::cout << fmt::format(
        "\ntrace.json: cut at {} events (--trace-events): it holds the pass up to {:.3f} ms, and {} "
        "later events were dropped\n",
        options.trace_events, static_cast<double>(written.dropped_from.count()) / 1e6, written.dropped);
  }
  std::cout << '\n' << cli::wrote_report_files(options.out) << '\n';
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"launchwatch: watch a program's kernel launches and see where device time went"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version",
      fmt::format("launchwatch {}.{}.{} (CUDA {}, HIP {}, Vulkan {})", LAUNCHWATCH_VERSION_MAJOR,
                  LAUNCHWATCH_VERSION_MINOR, LAUNCHWATCH_VERSION_PATCH,
                  LAUNCHWATCH_HAS_CUDA ? "built" : "not built",
                  !LAUNCHWATCH_HAS_HIP                ? "not built"
                  : LAUNCHWATCH_HIP_PLATFORM_NVIDIA ? "built for NVIDIA GPUs"
                                                    : "built for AMD GPUs",
                  LAUNCHWATCH_HAS_VULKAN ? "built" : "not built"));

  demo_options options;
  auto* demo_command = app.add_subcommand(
      "demo", "Run a small transformer under an attribution observer; print its report and write trace files");
  demo_command->add_option("--backend", options.backend, "cpu, cuda, hip or vulkan")
      ->check(CLI::IsMember({"cpu", "cuda", "hip", "vulkan"}))
      ->capture_default_str();
  demo_command->add_option("--device", options.device, "Device index within the backend")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  demo_command->add_option("--layers", options.model.layers, "Transformer blocks")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  demo_command->add_option("--tokens", options.model.tokens, "Sequence length")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  demo_command->add_option("--width", options.model.width, "Model width (a multiple of --heads)")
      ->check(CLI::Range(1, 8192))
      ->capture_default_str();
  demo_command->add_option("--heads", options.model.heads, "Attention heads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  demo_command->add_option("--hidden", options.model.hidden, "MLP inner width")
      ->check(CLI::Range(1, 32768))
      ->capture_default_str();
  demo_command->add_option("--passes", options.passes, "Forward passes to attribute")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  demo_command->add_option("--timing", options.timing,
                           "deferred (kernels back to back, read after the pass), resolved (each "
                           "kernel read as it ends), or none (counts only)")
      ->check(CLI::IsMember({"deferred", "resolved", "none"}))
      ->capture_default_str();
  demo_command
      ->add_option("-o,--out", options.out,
                   "Folder for trace.json, flame.folded and summary.json (a new or empty folder, or one "
                   "launchwatch wrote: it carries a .launchwatch-run stamp)")
      ->capture_default_str();
  demo_command->add_flag("--force", options.force,
                         "Write into --out even when it holds files launchwatch did not write (only its "
                         "three report files are replaced)");
  demo_command->add_flag("!--no-progress", options.progress, "Don't show progress on a terminal");
  demo_command->add_option("--trace-events", options.trace_events,
                           "Write at most this many events to trace.json (0: no limit); the "
                           "report says what was dropped")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();

  cli::report_options report;
  cli::add_report_command(app, report);

  cli::run_options run;
  auto* run_command = cli::add_run_command(app, run);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*demo_command) return run_demo(options);
    if (*run_command) return cli::run_program(run);
    return cli::run_report(report);
  } catch (const std::exception& error) {
    std::cerr << "launchwatch: " << error.what() << '\n';
    return 1;
  }
}
