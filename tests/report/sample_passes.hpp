// Passes built by hand with exact instants, for the renderers' golden files and the accounting
// checks: no runtime, no clock, the same bytes every run.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <launchwatch/report/pass_record.hpp>

namespace launchwatch::testing {

using namespace std::chrono_literals;

/// A point on a hand-built pass's timeline: `t` after its origin (one second past the epoch, so
/// nothing sits at zero by accident).
inline instant at(std::chrono::nanoseconds t) { return instant{} + 1s + t; }

/// Builds a pass_record a call at a time.
class pass_builder {
 public:
  explicit pass_builder(timing_request timing = timing_request::deferred) {
    pass_.origin = at(0ns);
    pass_.timing = timing;
  }

  std::uint32_t thread(std::string name) {
    pass_.threads.push_back(host_thread{std::move(name), {}});
    return static_cast<std::uint32_t>(pass_.threads.size() - 1);
  }

  std::uint32_t stream(std::uint64_t id, std::string backend = "cpu", int device = 0) {
    return pass_.add_stream(stream_info{std::move(backend), device, id});
  }

  /// A scope interval on `thread`: the path's last scope, from `start` to `end`.
  void scope(std::uint32_t thread, const std::vector<std::string_view>& path,
             std::chrono::nanoseconds start, std::chrono::nanoseconds end) {
    pass_.threads.at(thread).scopes.push_back(
        scope_interval{pass_.add_scope_path(path), at(start), at(end)});
  }

  /// What a launch looks like before its timing is decided.
  struct launch_spec {
    std::uint32_t thread = 0;
    std::string_view kernel;
    std::vector<std::string_view> path;  // empty: outside any scope
    std::uint32_t stream = 0;
    std::chrono::nanoseconds issued{0};
    std::chrono::nanoseconds returned{0};
  };

  launch_record& launch(const launch_spec& spec) {
    launch_record record;
    record.kernel = pass_.add_kernel(spec.kernel);
    if (!spec.path.empty()) record.scope = pass_.add_scope_path(spec.path);
    record.thread = spec.thread;
    record.stream = spec.stream;
    record.cube_count = {4, 1, 1};
    record.cube_dim = {256, 1, 1};
    record.issued = at(spec.issued);
    record.returned = at(std::max(spec.returned, spec.issued));
    pass_.launches.push_back(record);
    return pass_.launches.back();
  }

  /// A launch whose kernel ran from `start` to `end` on the device.
  launch_record& kernel(const launch_spec& spec, std::chrono::nanoseconds start,
                        std::chrono::nanoseconds end, timing_method method = timing_method::device) {
    auto& record = launch(spec);
    const auto ticks = profile_ticks::from_start_end(at(start), at(end));
    record.timing = launch_timing{ticks.length(), method, ticks};
    return record;
  }

  /// A launch known only by its length (resolved timing).
  launch_record& timed(const launch_spec& spec, std::chrono::nanoseconds length,
                       timing_method method = timing_method::system) {
    auto& record = launch(spec);
    record.timing = launch_timing{length, method, std::nullopt};
    return record;
  }

  pass_record& pass() { return pass_; }

 private:
  pass_record pass_;
};

inline constexpr std::string_view matmul = "demo::ops::matmul<float, 16>";
inline constexpr std::string_view softmax = "demo::ops::softmax<float>";
inline constexpr std::string_view gelu = "demo::ops::gelu<float>";
inline constexpr std::string_view layer_norm = "demo::ops::layer_norm<float>";
inline constexpr std::string_view copy = "demo::copy";
inline constexpr std::string_view fill = "demo::fill<int>";

/// Two host threads, nested scopes two layers deep, two streams, a kernel directly in a scope, a
/// launch outside any scope, idle gaps, and a dry-run launch. Times in whole microseconds.
inline pass_record sample_pass() {
  pass_builder b;
  const auto main = b.thread("host thread 1");
  const auto loader = b.thread("host thread 2");
  const auto s1 = b.stream(1);
  const auto s2 = b.stream(2);

  b.kernel({main, matmul, {"model", "layer 0", "attention"}, s1, 30us, 32us}, 100us, 160us);
  b.kernel({main, softmax, {"model", "layer 0", "attention"}, s1, 40us, 41us}, 160us, 180us);
  b.kernel({main, matmul, {"model", "layer 0", "attention"}, s1, 50us, 51us}, 185us, 245us);
  b.scope(main, {"model", "layer 0", "attention"}, 20us, 250us);
  b.kernel({main, matmul, {"model", "layer 0", "mlp"}, s1, 270us, 272us}, 270us, 330us);
  b.kernel({main, gelu, {"model", "layer 0", "mlp"}, s1, 280us, 281us}, 330us, 350us);
  b.kernel({main, matmul, {"model", "layer 0", "mlp"}, s1, 290us, 291us}, 360us, 420us);
  b.scope(main, {"model", "layer 0", "mlp"}, 260us, 440us);
  b.kernel({main, layer_norm, {"model", "layer 0"}, s1, 445us, 446us}, 446us, 456us);
  b.scope(main, {"model", "layer 0"}, 10us, 450us);
  b.kernel({main, matmul, {"model", "layer 1", "attention"}, s1, 480us, 482us}, 480us, 540us);
  b.kernel({main, softmax, {"model", "layer 1", "attention"}, s1, 490us, 491us}, 540us, 560us);
  b.scope(main, {"model", "layer 1", "attention"}, 470us, 600us);
  b.scope(main, {"model", "layer 1"}, 460us, 880us);
  b.scope(main, {"model"}, 0us, 900us);
  b.kernel({main, copy, {}, s1, 950us, 951us}, 960us, 1000us);

  b.kernel({loader, fill, {"loader"}, s2, 5us, 6us}, 10us, 30us);
  b.kernel({loader, fill, {"loader"}, s2, 100us, 101us}, 100us, 130us);
  b.scope(loader, {"loader"}, 0us, 300us);
  b.launch({loader, matmul, {}, s2, 310us, 310us}).dry_run = true;

  auto& pass = b.pass();
  std::stable_sort(pass.launches.begin(), pass.launches.end(),
                   [](const launch_record& x, const launch_record& y) { return x.issued < y.issued; });
  return pass;
}

/// Device timestamps in one scope, host wall time known only by length in another.
inline pass_record mixed_pass() {
  pass_builder b{timing_request::resolved};
  const auto main = b.thread("host thread 1");
  const auto s1 = b.stream(7, "cuda", 0);
  b.kernel({main, matmul, {"encode"}, s1, 0us, 1us}, 2us, 12us);
  b.kernel({main, softmax, {"encode"}, s1, 3us, 4us}, 14us, 16us);
  b.scope(main, {"encode"}, 0us, 5us);
  b.timed({main, gelu, {"decode"}, s1, 20us, 30us}, 8us);
  b.scope(main, {"decode"}, 19us, 31us);
  b.kernel({main, copy, {}, s1, 40us, 41us}, 41us, 45us);
  return b.pass();
}

/// Counts without timing: what a pass under timing_request::none records.
inline pass_record untimed_pass() {
  pass_builder b{timing_request::none};
  const auto main = b.thread("host thread 1");
  const auto s1 = b.stream(1);
  b.launch({main, layer_norm, {"block"}, s1, 1us, 1us});
  b.launch({main, matmul, {"block", "attention"}, s1, 2us, 2us});
  b.launch({main, matmul, {"block", "attention"}, s1, 3us, 3us});
  b.launch({main, softmax, {"block", "attention"}, s1, 4us, 4us});
  b.scope(main, {"block", "attention"}, 2us, 5us);
  b.scope(main, {"block"}, 0us, 6us);
  b.launch({main, copy, {}, s1, 7us, 7us});
  return b.pass();
}

/// A random but well-formed pass: per thread, nested scopes with launches inside them; per stream,
/// kernels in order with random gaps, some overlapping, some untimed, some dry, some known only by
/// length. For checking the accounting and the trace rules over many shapes.
inline pass_record random_pass(std::uint32_t seed) {
  std::mt19937 random{seed};
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>{low, high}(random); };
  static constexpr std::string_view kernels[] = {matmul, softmax, gelu, layer_norm, copy, fill};
  static constexpr std::string_view names[] = {"model", "layer", "attention", "mlp", "io"};

  pass_builder b{timing_request::deferred};
  const int threads = pick(1, 3);
  const int streams = pick(1, 3);
  std::vector<std::uint32_t> stream_ids;
  for (int s = 0; s < streams; ++s) stream_ids.push_back(b.stream(static_cast<std::uint64_t>(s + 1)));
  std::vector<std::chrono::nanoseconds> stream_free(static_cast<std::size_t>(streams), 0ns);

  for (int t = 0; t < threads; ++t) {
    const auto thread = b.thread("host thread " + std::to_string(t + 1));
    std::chrono::nanoseconds now{pick(0, 50) * 1000};
    struct open_scope {
      std::vector<std::string_view> path;
      std::chrono::nanoseconds start;
    };
    std::vector<open_scope> open;
    const int steps = pick(5, 40);
    for (int step = 0; step < steps; ++step) {
      const int action = pick(0, 9);
      if (action < 3 && open.size() < 4) {
        auto path = open.empty() ? std::vector<std::string_view>{} : open.back().path;
        path.push_back(names[pick(0, 4)]);
        open.push_back({path, now});
      } else if (action < 5 && !open.empty()) {
        b.scope(thread, open.back().path, open.back().start, now);
        open.pop_back();
      } else {
        const auto s = static_cast<std::size_t>(pick(0, streams - 1));
        const std::vector<std::string_view> path = open.empty() ? std::vector<std::string_view>{}
                                                                : open.back().path;
        const auto returned = now + std::chrono::nanoseconds{pick(0, 3000)};
        const pass_builder::launch_spec spec{thread, kernels[pick(0, 5)], path, stream_ids[s], now,
                                             returned};
        const int kind = pick(0, 9);
        auto start = std::max(now, stream_free[s]) + std::chrono::nanoseconds{pick(0, 5) * 1000};
        if (kind == 0 && start > 2000ns) start -= 2000ns;  // overlaps what ran before, sometimes
        const auto end = start + std::chrono::nanoseconds{pick(0, 40) * 500};
        if (kind == 1) {
          b.launch(spec);
        } else if (kind == 2) {
          b.kernel(spec, start, end).dry_run = true;
        } else if (kind == 3) {
          b.timed(spec, std::chrono::nanoseconds{pick(1, 9000)});
        } else {
          b.kernel(spec, start, end);
          stream_free[s] = std::max(stream_free[s], end);
        }
        now = returned;
      }
      now += std::chrono::nanoseconds{pick(0, 4000)};
    }
    while (!open.empty()) {
      b.scope(thread, open.back().path, open.back().start, now);
      open.pop_back();
      now += 1000ns;
    }
  }
  auto& pass = b.pass();
  std::stable_sort(pass.launches.begin(), pass.launches.end(),
                   [](const launch_record& x, const launch_record& y) { return x.issued < y.issued; });
  return pass;
}

}  // namespace launchwatch::testing
