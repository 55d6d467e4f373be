// Deferred timing on Vulkan, by the shader clock and by timestamp queries, side by side in one run
// (issue 24's Vulkan targets):
//
// 1. Pass wall, deferred / untimed, of back-to-back spin kernels of 5 µs and 50 µs on 132 cubes
//    of 128 units: each deferred pass right after an untimed one of the same kernels, the ratio
//    taken within the pair (target: at most 1.05x at 5 µs, 1.02x at 50 µs).
// 2. The durations the two methods give the same kernels (target: medians within max(2%, 0.2 µs)),
//    and the shader clock's own window without the grid overhead it is widened by.
// 3. The stream's time per kernel (each pass's wall over its kernels), untimed and deferred by each
//    method, and each method's median duration over it: back to back, a duration longer than its
//    kernel's share of the pass overlaps its neighbours.
// 4. From each window's end to the next one's start, by each method: zero where a window was
//    widened back to its predecessor's end (the widening then bounded by it, not by the overhead).
//
// A device's timing method is fixed when it is opened, so the parent runs each method in child
// processes of this program, rounds alternating the order: `clock` (the default: the shader clock
// where offered), `raw` (the same with LAUNCHWATCH_VULKAN_GRID_OVERHEAD_NS=0) and `queries`
// (LAUNCHWATCH_VULKAN_CLOCK_SLOTS=0). Each child says how its measurements were taken (the
// device's counts), and the parent prints medians with p10-p90 over every pass of every round.
//
// Usage: launchwatch_vulkan_timing_bench [--quick] [--rounds N]
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <launchwatch/launchwatch.hpp>

#include "backend/vulkan/vulkan_device.hpp"
#include "support/launch_observers.hpp"
#include "vulkan_bench_shaders.hpp"

namespace {

namespace lw = launchwatch;
using clock_type = std::chrono::steady_clock;

/// Spins every unit for `nanoseconds` (the host body, for the CPU backend; this program runs it
/// on Vulkan only).
struct spin_kernel {
  std::uint64_t nanoseconds;
  std::uint32_t steps;
  lw::device_span<int> done;
  void operator()(lw::unit u) const {
    const auto start = clock_type::now();
    while (clock_type::now() - start < std::chrono::nanoseconds{nanoseconds}) {
    }
    if (u.absolute_pos() == 0 && !done.empty()) done[0] = 1;
  }
  static constexpr lw::vulkan_shader vulkan = lw::vulkan_bench::shaders::spin_clock;
};

struct shape {
  const char* name;
  std::uint64_t nanoseconds;
  int kernels;  // per pass
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(std::lround(p * static_cast<double>(v.size() - 1)))];
}

std::string spread(const std::vector<double>& v, const char* format) {
  char out[128];
  const std::string f = std::string{format} + " [" + format + "-" + format + "]";
  std::snprintf(out, sizeof out, f.c_str(), percentile(v, 0.5), percentile(v, 0.1),
                percentile(v, 0.9));
  return out;
}

// ---- child: one method, every shape, `passes` pairs of passes --------------------------------

int run_child(const char* method, bool quick, int passes) {
  lw::client on = lw::client::vulkan();
  const auto device = lw::detail::vulkan::opened_device(0);
  // A GPU spins on its clock alone; lavapipe needs work between reads (see spin_clock.comp).
  const bool cpu_device = on.device_name().find("llvmpipe") != std::string::npos;
  const std::uint32_t steps = cpu_device ? 128 : 0;
  auto done = on.empty<int>(1);
  const std::vector<shape> shapes =
      quick ? std::vector<shape>{{"5us", 5'000, 20}, {"50us", 50'000, 10}}
            : std::vector<shape>{{"5us", 5'000, 2000}, {"50us", 50'000, 400}};
  const lw::cube_count cubes{quick ? 4u : 132u};
  const lw::cube_dim units{quick ? 8u : 128u};
  for (const shape& s : shapes) {
    const auto launch = [&] {
      on.launch(spin_kernel{s.nanoseconds, steps, done.view()}, cubes, units);
    };
    // Warm: pipelines compiled, the calibration taken (a first read completes it).
    {
      auto kept = std::make_shared<lw::bench::keeps_unread>();
      {
        lw::launch_observation watching{kept};
        for (int i = 0; i < 8; ++i) launch();
      }
      on.sync();
      for (auto& profile : kept->kept_) (void)std::move(profile).resolve();
    }
    for (int p = 0; p < passes; ++p) {
      on.sync();
      auto start = clock_type::now();
      for (int i = 0; i < s.kernels; ++i) launch();
      on.sync();
      const double untimed =
          std::chrono::duration<double, std::nano>(clock_type::now() - start).count();

      auto kept = std::make_shared<lw::bench::keeps_unread>();
      kept->kept_.reserve(static_cast<std::size_t>(s.kernels));
      start = clock_type::now();
      {
        lw::launch_observation watching{kept};
        for (int i = 0; i < s.kernels; ++i) launch();
      }
      on.sync();
      const double deferred =
          std::chrono::duration<double, std::nano>(clock_type::now() - start).count();
      std::printf("pass %s %.0f %.0f %d\n", s.name, untimed, deferred, s.kernels);
      std::string lengths;
      std::string gaps;  // from each window's end to the next one's start (negative: overlap)
      std::optional<lw::instant> previous_end;
      for (auto& profile : kept->kept_) {
        const bool system = profile.method() == lw::timing_method::system;
        if (const auto ticks = std::move(profile).resolve(); ticks && !system) {
          lengths += ' ' + std::to_string(ticks->length().count());
          if (previous_end) {
            gaps += ' ' + std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             ticks->start() - *previous_end)
                                             .count());
          }
          previous_end = ticks->end();
        } else {
          previous_end.reset();
        }
      }
      std::printf("durations %s%s\n", s.name, lengths.c_str());
      std::printf("gaps %s%s\n", s.name, gaps.c_str());
    }
  }
  const auto counts = device->timed_counts();
  std::printf("counts %llu %llu %llu\n", static_cast<unsigned long long>(counts.shader_clock),
              static_cast<unsigned long long>(counts.timestamps),
              static_cast<unsigned long long>(counts.system));
  if (std::strcmp(method, "queries") != 0 && device->shader_timing(device->next_queue())) {
    std::printf("calibration %.9f %lld\n", device->shader_time().ns_per_tick(),
                static_cast<long long>(device->shader_time().overhead().count()));
  }
  std::printf("device %s\n", on.device_name().c_str());
  return 0;
}

// ---- parent: rounds of children, the table -------------------------------------------------

struct method_results {
  std::map<std::string, std::vector<double>> ratios;     // by shape: deferred / untimed per pass
  std::map<std::string, std::vector<double>> durations;  // by shape: every kernel's, ns
  // By shape: from each window's end to the next's start, ns (negative where they overlap).
  std::map<std::string, std::vector<double>> gaps;
  // By shape: each pass's wall over its kernels, ns: the stream's time per kernel.
  std::map<std::string, std::vector<double>> untimed_period, deferred_period;
  std::uint64_t counts[3] = {0, 0, 0};
  std::vector<double> ns_per_tick, overhead;
  std::string device;
};

bool run_round(const std::string& self, const char* method, const char* environment, bool quick,
               int passes, method_results& into) {
  const std::string command = std::string{environment} + " '" + self + "' --child " + method +
                              (quick ? " --quick" : "") + " --passes " + std::to_string(passes);
  FILE* child = ::popen(command.c_str(), "r");
  if (child == nullptr) return false;
  std::string line;
  char chunk[4096];
  std::string all;
  while (std::fgets(chunk, sizeof chunk, child) != nullptr) all += chunk;
  const int status = ::pclose(child);
  std::istringstream lines{all};
  while (std::getline(lines, line)) {
    std::istringstream in{line};
    std::string what, shape_name;
    in >> what;
    if (what == "pass") {
      double untimed = 0, deferred = 0;
      int kernels = 0;
      in >> shape_name >> untimed >> deferred >> kernels;
      if (untimed > 0) into.ratios[shape_name].push_back(deferred / untimed);
      if (kernels > 0) {
        into.untimed_period[shape_name].push_back(untimed / kernels);
        into.deferred_period[shape_name].push_back(deferred / kernels);
      }
    } else if (what == "durations") {
      in >> shape_name;
      for (double ns = 0; in >> ns;) into.durations[shape_name].push_back(ns);
    } else if (what == "gaps") {
      in >> shape_name;
      for (double ns = 0; in >> ns;) into.gaps[shape_name].push_back(ns);
    } else if (what == "counts") {
      for (auto& c : into.counts) {
        std::uint64_t n = 0;
        in >> n;
        c += n;
      }
    } else if (what == "calibration") {
      double rate = 0, overhead = 0;
      in >> rate >> overhead;
      into.ns_per_tick.push_back(rate);
      into.overhead.push_back(overhead);
    } else if (what == "device") {
      std::getline(in >> std::ws, into.device);
    } else {
      std::printf("  [%s] %s\n", method, line.c_str());  // the child's own diagnostics
    }
  }
  return status == 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int rounds = 5;
  int passes = 3;
  const char* child = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--passes") == 0 && i + 1 < argc)
      passes = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--child") == 0 && i + 1 < argc)
      child = argv[++i];
  }
  if (child != nullptr) return run_child(child, quick, passes);
  if (quick) {
    rounds = std::min(rounds, 2);
    passes = std::min(passes, 2);
  }

  char self[4096] = {};
  if (::readlink("/proc/self/exe", self, sizeof self - 1) <= 0) return 2;
  struct method {
    const char* name;
    const char* label;
    const char* environment;
  };
  const method methods[] = {
      {"clock", "shader clock", "LAUNCHWATCH_VULKAN_CLOCK_SLOTS=4352"},
      {"raw", "shader clock, no grid overhead", "LAUNCHWATCH_VULKAN_GRID_OVERHEAD_NS=0"},
      {"queries", "timestamp queries", "LAUNCHWATCH_VULKAN_CLOCK_SLOTS=0"},
  };
  std::map<std::string, method_results> results;
  for (int r = 0; r < rounds; ++r) {
    for (int m = 0; m < 3; ++m) {
      const method& each = methods[(m + r) % 3];  // the order rotates every round
      if (!run_round(self, each.name, each.environment, quick, passes, results[each.name])) {
        std::printf("the %s child failed (round %d)\n", each.name, r + 1);
        return 1;
      }
    }
  }

  std::printf("launchwatch Vulkan timing bench on %s (%s): %d rounds x %d passes per method\n",
              results["clock"].device.c_str(), quick ? "quick" : "full", rounds, passes);
  std::printf(
      "\n[how each method's launches were measured] shader clock / timestamp queries / system\n");
  for (const method& each : methods) {
    const auto& c = results[each.name].counts;
    std::printf("  %-32s %llu / %llu / %llu\n", each.label, static_cast<unsigned long long>(c[0]),
                static_cast<unsigned long long>(c[1]), static_cast<unsigned long long>(c[2]));
  }
  if (!results["clock"].ns_per_tick.empty()) {
    std::printf(
        "  shader clock calibration: %s ns a tick, grid overhead %s ns (median [p10-p90] "
        "over the children)\n",
        spread(results["clock"].ns_per_tick, "%.6f").c_str(),
        spread(results["clock"].overhead, "%.0f").c_str());
  }

  const char* shapes[] = {"5us", "50us"};
  const double targets[] = {1.05, 1.02};
  std::printf(
      "\n[pass wall, deferred / untimed] back-to-back spin kernels on %s, median [p10-p90] "
      "of per-pass ratios\n",
      quick ? "4 cubes of 8 units" : "132 cubes of 128 units");
  std::printf("  %-6s %-28s %-28s %s\n", "kernel", "shader clock", "timestamp queries", "target");
  for (int s = 0; s < 2; ++s) {
    const auto& clock = results["clock"].ratios[shapes[s]];
    const auto& queries = results["queries"].ratios[shapes[s]];
    std::printf("  %-6s %-28s %-28s <= %.2fx (shader clock: %s)\n", shapes[s],
                spread(clock, "%.3f").c_str(), spread(queries, "%.3f").c_str(), targets[s],
                percentile(clock, 0.5) <= targets[s] ? "met" : "not met");
  }

  const auto in_us = [](const std::vector<double>& ns) {
    std::vector<double> out;
    for (double each : ns) out.push_back(each / 1000);
    return out;
  };
  std::printf("\n[durations, us] every kernel of every deferred pass, median [p10-p90]\n");
  std::printf("  %-6s %-26s %-26s %-26s %-10s %-8s %s\n", "kernel", "shader clock",
              "timestamp queries", "shader clock, raw window", "difference", "bound", "met");
  for (const char* s : shapes) {
    const auto clock = in_us(results["clock"].durations[s]);
    const auto queries = in_us(results["queries"].durations[s]);
    const auto raw = in_us(results["raw"].durations[s]);
    const double difference = percentile(clock, 0.5) - percentile(queries, 0.5);
    const double bound = std::max(0.02 * percentile(queries, 0.5), 0.2);
    std::printf("  %-6s %-26s %-26s %-26s %+-10.3f %-8.3f %s\n", s, spread(clock, "%.3f").c_str(),
                spread(queries, "%.3f").c_str(), spread(raw, "%.3f").c_str(), difference, bound,
                std::abs(difference) <= bound ? "yes" : "no");
  }

  // What the durations are measured against: the stream's own time per kernel. Back to back, a
  // kernel's duration can exceed its share of its pass only by overlapping its neighbours: a
  // method whose durations do also measures the drain it adds around each kernel.
  std::printf(
      "\n[stream time per kernel, us] pass wall / kernels, median [p10-p90], and each method's "
      "median duration over it\n");
  std::printf("  %-6s %-26s %-26s %-26s %-24s %s\n", "kernel", "untimed", "deferred, shader clock",
              "deferred, queries", "clock: duration/its pass", "queries: duration/untimed");
  for (const char* s : shapes) {
    std::vector<double> untimed = in_us(results["clock"].untimed_period[s]);
    for (double each : in_us(results["queries"].untimed_period[s])) untimed.push_back(each);
    const auto clock = in_us(results["clock"].deferred_period[s]);
    const auto queries = in_us(results["queries"].deferred_period[s]);
    const double clock_duration = percentile(results["clock"].durations[s], 0.5) / 1000;
    const double queries_duration = percentile(results["queries"].durations[s], 0.5) / 1000;
    std::printf("  %-6s %-26s %-26s %-26s %-24.3f %.3f\n", s, spread(untimed, "%.3f").c_str(),
                spread(clock, "%.3f").c_str(), spread(queries, "%.3f").c_str(),
                clock_duration / percentile(clock, 0.5),
                queries_duration / percentile(untimed, 0.5));
  }

  // Where each method's windows lie against their neighbours: a window widened back to the end of
  // the one before it shows a gap of zero, so the widening was bounded by it, not by the overhead.
  std::printf(
      "\n[from a window's end to the next one's start, us] consecutive kernels of each deferred "
      "pass, median [p10-p90] (negative: overlapping)\n");
  std::printf("  %-6s %-26s %-26s %s\n", "kernel", "shader clock", "timestamp queries",
              "shader clock, raw window");
  for (const char* s : shapes) {
    std::printf("  %-6s %-26s %-26s %s\n", s,
                spread(in_us(results["clock"].gaps[s]), "%.3f").c_str(),
                spread(in_us(results["queries"].gaps[s]), "%.3f").c_str(),
                spread(in_us(results["raw"].gaps[s]), "%.3f").c_str());
  }
  return 0;
}
