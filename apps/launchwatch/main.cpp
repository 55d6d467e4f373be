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
#include <launchwatch/attribute/diff.hpp>
#include <launchwatch/attribute/merge.hpp>
#include <launchwatch/attribute/render.hpp>
#include <launchwatch/attribute/report_files.hpp>
#include <launchwatch/attribute/summary.hpp>
#include <launchwatch/config.hpp>
#include <launchwatch/runtime/client.hpp>

#include "forward.hpp"
#include "output_folder.hpp"
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

struct report_options {
  fs::path summary;
  std::vector<fs::path> merge;
  std::string sort = "issue";
  std::string idle = "device";
  std::vector<fs::path> diff;
  std::optional<double> fail_above;
};

/// The exit status when a row grew past --fail-above: distinct from errors (1) and the demo's
/// numerics mismatch (3), so a CI can tell a regression from a broken run.
constexpr int grew_past_threshold = 4;

int run_diff(const report_options& options) {
  const auto base = load_summary(options.diff.at(0));
  const auto current = load_summary(options.diff.at(1));
  const auto diff = diff_summaries(base, current);
  std::cout << fmt::format("launchwatch diff: {} (base) -> {} (new)\n\n", options.diff[0].string(),
                           options.diff[1].string());
  diff_options shown;
  shown.fail_above = options.fail_above;
  write_diff(std::cout, diff, shown);
  if (!options.fail_above) return 0;
  bool grew = grew_past(diff.total, *options.fail_above);
  for (const auto& row : diff.rows) grew = grew || grew_past(row, *options.fail_above);
  return grew ? grew_past_threshold : 0;
}

/// The summaries of several processes of one job, each labelled by the rank it recorded, else by
/// its place on the command line.
pass_summary merged_summary(const std::vector<fs::path>& files) {
  std::vector<process_summary> processes;
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto summary = load_summary(files[i]);
    std::string label = summary.process.empty() ? fmt::format("rank {}", i) : summary.process;
    processes.push_back({std::move(label), std::move(summary)});
  }
  return merge_summaries(processes);
}

int run_report(const report_options& options) {
  if (!options.diff.empty()) return run_diff(options);
  tree_options tree;
  tree.order = options.sort == "time" ? tree_order::time : tree_order::issue;
  tree.accounting = options.idle == "stream" ? idle_accounting::stream : idle_accounting::device;
  if (!options.merge.empty()) {
    std::cout << fmt::format("launchwatch: {} processes merged\n\n", options.merge.size());
    write_tree(std::cout, merged_summary(options.merge), tree);
    return 0;
  }
  write_tree(std::cout, load_summary(options.summary), tree);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"launchwatch: watch a program's kernel launches and see where device time went"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("launchwatch {}.{}.{} (CUDA {}, Vulkan {})", LAUNCHWATCH_VERSION_MAJOR,
                                                LAUNCHWATCH_VERSION_MINOR, LAUNCHWATCH_VERSION_PATCH,
                                                LAUNCHWATCH_HAS_CUDA ? "built" : "not built",
                                                LAUNCHWATCH_HAS_VULKAN ? "built" : "not built"));

  demo_options options;
  auto* demo_command = app.add_subcommand(
      "demo", "Run a small transformer under an attribution observer; print its report and write trace files");
  demo_command->add_option("--backend", options.backend, "cpu, cuda or vulkan")
      ->check(CLI::IsMember({"cpu", "cuda", "vulkan"}))
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

  report_options report;
  auto* report_command = app.add_subcommand("report", "Print the report of a saved summary.json");
  auto* summary_option =
      report_command->add_option("summary", report.summary, "A summary.json written by `launchwatch demo`")
          ->check(CLI::ExistingFile);
  auto* diff_option =
      report_command
          ->add_option("--diff", report.diff,
                       "BASE.json NEW.json: print per scope and kernel the change in launches and "
                       "device time from BASE to NEW")
          ->expected(2)
          ->check(CLI::ExistingFile)
          ->excludes(summary_option);
  report_command
      ->add_option("--merge", report.merge,
                   "RANK0.json RANK1.json ...: print one report of a job's processes, each a "
                   "top-level row (labelled by the rank it recorded, else by its place here)")
      ->expected(2, -1)
      ->check(CLI::ExistingFile)
      ->excludes(summary_option)
      ->excludes(diff_option);
  report_command
      ->add_option("--fail-above", report.fail_above,
                   "With --diff: exit 4 when any row grew by more than PERCENT (launches or device "
                   "time; a new row always counts)")
      ->check(CLI::NonNegativeNumber)
      ->needs(diff_option);
  report_command->callback([&] {
    if (report.diff.empty() && report.summary.empty() && report.merge.empty()) {
      throw CLI::RequiredError{
          "a summary.json to print, --diff BASE.json NEW.json, or --merge RANK0.json RANK1.json ..."};
    }
  });
  report_command->add_option("--sort", report.sort,
                             "issue (rows in the order the program ran them) or time (hottest first)")
      ->check(CLI::IsMember({"issue", "time"}))
      ->capture_default_str();
  report_command->add_option("--idle", report.idle,
                             "device (100% is each device's window, its streams united) or stream "
                             "(each stream's window, summed)")
      ->check(CLI::IsMember({"device", "stream"}))
      ->capture_default_str();

  cli::run_options run;
  auto* run_command = cli::add_run_command(app, run);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*demo_command) return run_demo(options);
    if (*run_command) return cli::run_program(run);
    return run_report(report);
  } catch (const std::exception& error) {
    std::cerr << "launchwatch: " << error.what() << '\n';
    return 1;
  }
}
