// How to time a CUDA launch without waiting for it: the measurement behind the CUDA backend's choice.
//
// Compares, side by side in one run on one device:
//   raw       cudaLaunchKernel of the runtime's own entry, untimed;
//   events    the same bracketed by a pair of CUDA events (the usual way);
//   slot      the entry stamping the device's global timer into a timing slot (the backend's way);
//   +point    a timing-disabled event after each launch (what exact per-launch ordering points cost).
// for the host's cost per launch, the pass's cost per launch, and what each measures of empty, ~5 µs
// and ~50 µs kernels run back to back; then what a blocking read of one launch's time costs; then the
// device clock itself (step, anchoring, drift, and whether mapped kernel times fall between the host
// instants that bracket them); then what the timing epilogue costs a large grid.
//
// Every number is a median over repetitions taken in this run; compare within the run only.
// Usage: launchwatch_timing_mechanism_bench [--quick]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <launchwatch/detail/cuda_entry.hpp>

#include "cuda_check.hpp"
#include "device_clock.hpp"
#include "timing_slots.hpp"

namespace {

namespace lw = launchwatch;
namespace lwd = launchwatch::detail;
namespace lwc = launchwatch::detail::cuda;
using clock_type = std::chrono::steady_clock;

void check(cudaError_t status, const char* call) { lwc::check(status, call, 0); }

// ---- kernels --------------------------------------------------------------------------------

struct empty_kernel {
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit) const {}
};

// Every unit spins until `ns` of the global timer have passed since it started.
struct spin_kernel {
  std::uint64_t ns;
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit) const {
#if defined(__CUDA_ARCH__)
    const std::uint64_t began = lwd::cuda_global_timer();
    while (lwd::cuda_global_timer() - began < ns) {
    }
#endif
  }
};

struct fill_kernel {
  float* out;
  std::uint64_t n;
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit u) const {
    const std::uint64_t i = u.absolute_pos();
    if (i < n) out[i] = static_cast<float>(i & 1023u);
  }
};

__global__ void read_timer_repeatedly(std::uint64_t* out, int count) {
  for (int i = 0; i < count; ++i) out[i] = lwd::cuda_global_timer();
}

template <class K>
void launch(const K& kernel, dim3 grid, dim3 block, lwd::cuda_timing_target timing,
            cudaStream_t stream) {
  void* args[] = {const_cast<K*>(&kernel), &timing};
  check(cudaLaunchKernel(reinterpret_cast<const void*>(&lwd::cuda_entry<K>), grid, block, args, 0,
                         stream),
        "cudaLaunchKernel");
}

// ---- statistics -----------------------------------------------------------------------------

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto at = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[at];
}
double median(const std::vector<double>& v) { return percentile(v, 0.5); }

double us_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

struct row {
  std::string section;
  std::string what;
  double value;
  std::string unit;
  std::string note;
};
std::vector<row> table;

void add(const std::string& section, const std::string& what, double value, const std::string& unit,
         const std::string& note = "") {
  table.push_back({section, what, value, unit, note});
  std::printf("  %-10s %-52s %12.3f %-6s %s\n", section.c_str(), what.c_str(), value, unit.c_str(),
              note.c_str());
  std::fflush(stdout);
}

// ---- the mechanisms -------------------------------------------------------------------------

enum class mechanism { raw, events, slot, ordering_event };
const char* name_of(mechanism m) {
  switch (m) {
    case mechanism::raw: return "raw";
    case mechanism::events: return "events";
    case mechanism::slot: return "slot";
    case mechanism::ordering_event: return "+point";
  }
  return "?";
}

struct rig {
  cudaStream_t stream = nullptr;
  std::vector<cudaEvent_t> timing_events;   // pairs
  std::vector<cudaEvent_t> ordering_events;  // one per launch, timing disabled
  lwc::timing_collector collector{0, std::make_shared<lwc::device_health>(0),
                                  lwc::timing_collector::default_slots};
  std::shared_ptr<lwc::timing_batch> open;  // the stream's open batch, as a cuda_stream keeps it
  lwc::device_clock clock{0};
  std::vector<lwc::timing_record*> records;
  std::shared_ptr<lwc::timing_batch> filled;

  explicit rig(std::size_t batch) {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    timing_events.resize(2 * batch);
    for (auto& e : timing_events) check(cudaEventCreate(&e), "cudaEventCreate");
    ordering_events.resize(batch);
    for (auto& e : ordering_events) {
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    }
    // Grow the collector's blocks before anything is timed, so no allocation lands in a
    // measurement: one batch's worth of launches, read back.
    issue(mechanism::slot, empty_kernel{}, 1, 32, batch);
    sync();
    (void)slot_windows();
    clock.ensure_anchored();
  }
  ~rig() {
    for (auto& e : timing_events) cudaEventDestroy(e);
    for (auto& e : ordering_events) cudaEventDestroy(e);
    cudaStreamDestroy(stream);
  }

  // Issues `count` launches of `kernel` timed by `m`; returns the host time the loop took.
  template <class K>
  double issue(mechanism m, const K& kernel, dim3 grid, dim3 block, std::size_t count) {
    records.clear();
    const auto began = clock_type::now();
    for (std::size_t i = 0; i < count; ++i) {
      switch (m) {
        case mechanism::raw:
          launch(kernel, grid, block, {}, stream);
          break;
        case mechanism::events:
          check(cudaEventRecord(timing_events[2 * i], stream), "cudaEventRecord");
          launch(kernel, grid, block, {}, stream);
          check(cudaEventRecord(timing_events[2 * i + 1], stream), "cudaEventRecord");
          break;
        case mechanism::slot: {
          launch(kernel, grid, block, take(), stream);
          close_filled();
          break;
        }
        case mechanism::ordering_event:
          launch(kernel, grid, block, {}, stream);
          check(cudaEventRecord(ordering_events[i], stream), "cudaEventRecord");
          break;
      }
    }
    return us_between(began, clock_type::now());
  }

  void sync() { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }

  /// A slot for one timed launch, its record kept for slot_windows().
  lwd::cuda_timing_target take() {
    const auto lease = collector.acquire(open, stream, clock_type::now());
    if (!lease) {
      std::fprintf(stderr, "the timing collector ran out of slots: use smaller batches\n");
      std::exit(1);
    }
    records.push_back(lease->record);
    filled = std::move(lease->filled);
    return lease->target;
  }

  /// Closes the batch the last take() filled, as a stream does once that launch is submitted.
  void close_filled() {
    if (filled) collector.close(std::exchange(filled, nullptr));
  }

  /// The window of the one launch take() was last asked for, waiting for it to be read back.
  lwc::device_window read_last() {
    auto* record = records.back();
    records.pop_back();
    const auto w = collector.wait(*record, "timing_mechanism_bench");
    collector.let_go(record);
    if (!w) {
      std::fprintf(stderr, "a timed launch left no window\n");
      std::exit(1);
    }
    return *w;
  }

  std::vector<double> event_windows_us(std::size_t count) {
    std::vector<double> out;
    for (std::size_t i = 0; i < count; ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, timing_events[2 * i], timing_events[2 * i + 1]),
            "cudaEventElapsedTime");
      out.push_back(ms * 1000.0);
    }
    return out;
  }

  std::vector<lwc::device_window> slot_windows() {
    std::vector<lwc::device_window> out;
    for (auto* record : records) {
      auto w = collector.wait(*record, "timing_mechanism_bench");
      if (!w) {
        std::fprintf(stderr, "a timed launch left no window\n");
        std::exit(1);
      }
      out.push_back(*w);
      collector.let_go(record);
    }
    records.clear();
    return out;
  }
};

// ---- sections -------------------------------------------------------------------------------

void issue_costs(rig& r, int reps, std::size_t batch) {
  std::printf("\n[issue] empty kernel <<<1,32>>>, %zu launches a batch, %d batches each\n", batch,
              reps);
  const mechanism all[] = {mechanism::raw, mechanism::events, mechanism::slot,
                           mechanism::ordering_event};
  std::vector<double> host[4], pass[4];
  for (int rep = -2; rep < reps; ++rep) {  // two warm-up batches
    for (int k = 0; k < 4; ++k) {
      const auto began = clock_type::now();
      const double issued = r.issue(all[k], empty_kernel{}, 1, 32, batch);
      r.sync();
      const double total = us_between(began, clock_type::now());
      if (all[k] == mechanism::slot) (void)r.slot_windows();
      if (rep < 0) continue;
      host[k].push_back(issued / static_cast<double>(batch));
      pass[k].push_back(total / static_cast<double>(batch));
    }
  }
  for (int k = 0; k < 4; ++k) {
    add("issue", std::string{"host per launch, "} + name_of(all[k]), median(host[k]), "us",
        "x" + std::to_string(median(host[k]) / median(host[0])).substr(0, 5) + " raw");
  }
  for (int k = 0; k < 4; ++k) {
    add("issue", std::string{"pass per launch (issue+drain), "} + name_of(all[k]), median(pass[k]),
        "us", "x" + std::to_string(median(pass[k]) / median(pass[0])).substr(0, 5) + " raw");
  }
}

template <class K>
void windows(rig& r, const char* label, const K& kernel, dim3 grid, dim3 block, int reps,
             std::size_t batch) {
  std::printf("\n[window] %s, %zu back to back, %d batches\n", label, batch, reps);
  std::vector<double> pass_raw, pass_events, pass_slot, ev, sl, gaps, both_ev, both_sl;
  for (int rep = -1; rep < reps; ++rep) {
    auto began = clock_type::now();
    r.issue(mechanism::raw, kernel, grid, block, batch);
    r.sync();
    const double raw_total = us_between(began, clock_type::now());

    began = clock_type::now();
    r.issue(mechanism::events, kernel, grid, block, batch);
    r.sync();
    const double events_total = us_between(began, clock_type::now());
    auto e = r.event_windows_us(batch);

    began = clock_type::now();
    r.issue(mechanism::slot, kernel, grid, block, batch);
    r.sync();
    const double slot_total = us_between(began, clock_type::now());
    auto s = r.slot_windows();

    // Both on the same launches: events around a slot-timed launch.
    r.records.clear();
    for (std::size_t i = 0; i < batch; ++i) {
      check(cudaEventRecord(r.timing_events[2 * i], r.stream), "cudaEventRecord");
      launch(kernel, grid, block, r.take(), r.stream);
      r.close_filled();
      check(cudaEventRecord(r.timing_events[2 * i + 1], r.stream), "cudaEventRecord");
    }
    r.sync();
    auto be = r.event_windows_us(batch);
    auto bs = r.slot_windows();
    if (rep < 0) continue;

    pass_raw.push_back(raw_total / static_cast<double>(batch));
    pass_events.push_back(events_total / static_cast<double>(batch));
    pass_slot.push_back(slot_total / static_cast<double>(batch));
    ev.insert(ev.end(), e.begin(), e.end());
    for (std::size_t i = 0; i < s.size(); ++i) {
      sl.push_back(static_cast<double>(s[i].end - s[i].start) / 1000.0);
      if (i + 1 < s.size()) {
        gaps.push_back(static_cast<double>(static_cast<std::int64_t>(s[i + 1].start - s[i].end)) /
                       1000.0);
      }
    }
    for (std::size_t i = 0; i < bs.size(); ++i) {
      both_ev.push_back(be[i]);
      both_sl.push_back(static_cast<double>(bs[i].end - bs[i].start) / 1000.0);
    }
  }
  const std::string l = label;
  add("window", l + ": events window, median", median(ev), "us",
      "p10 " + std::to_string(percentile(ev, 0.1)).substr(0, 6) + " p90 " +
          std::to_string(percentile(ev, 0.9)).substr(0, 6));
  add("window", l + ": slot window, median", median(sl), "us",
      "p10 " + std::to_string(percentile(sl, 0.1)).substr(0, 6) + " p90 " +
          std::to_string(percentile(sl, 0.9)).substr(0, 6));
  add("window", l + ": slot gap between kernels, median", median(gaps), "us");
  std::vector<double> diff;
  for (std::size_t i = 0; i < both_ev.size(); ++i) diff.push_back(both_ev[i] - both_sl[i]);
  add("window", l + ": same launch, events minus slot, median", median(diff), "us",
      "p90 " + std::to_string(percentile(diff, 0.9)).substr(0, 6));
  add("window", l + ": pass per kernel, raw", median(pass_raw), "us");
  add("window", l + ": pass per kernel, events", median(pass_events), "us",
      "x" + std::to_string(median(pass_events) / median(pass_raw)).substr(0, 5) + " raw");
  add("window", l + ": pass per kernel, slot", median(pass_slot), "us",
      "x" + std::to_string(median(pass_slot) / median(pass_raw)).substr(0, 5) + " raw");
}

void resolved_round_trips(rig& r, int count) {
  std::printf("\n[resolved] launch, then block for that launch's time, %d times each\n", count);
  std::vector<double> sync_rt, event_rt, slot_rt;
  for (int i = -50; i < count; ++i) {
    auto began = clock_type::now();
    launch(empty_kernel{}, 1, 32, {}, r.stream);
    r.sync();
    const double a = us_between(began, clock_type::now());

    began = clock_type::now();
    check(cudaEventRecord(r.timing_events[0], r.stream), "cudaEventRecord");
    launch(empty_kernel{}, 1, 32, {}, r.stream);
    check(cudaEventRecord(r.timing_events[1], r.stream), "cudaEventRecord");
    check(cudaEventSynchronize(r.timing_events[1]), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, r.timing_events[0], r.timing_events[1]),
          "cudaEventElapsedTime");
    const double b = us_between(began, clock_type::now());

    began = clock_type::now();
    launch(empty_kernel{}, 1, 32, r.take(), r.stream);
      r.close_filled();
    const lwc::device_window w = r.read_last();
    const lw::profile_ticks ticks = r.clock.to_ticks(w.start, w.end);
    const double c = us_between(began, clock_type::now());
    (void)ticks;
    if (i < 0) continue;
    sync_rt.push_back(a);
    event_rt.push_back(b);
    slot_rt.push_back(c);
  }
  r.sync();
  add("resolved", "launch + stream sync (no timing)", median(sync_rt), "us");
  add("resolved", "launch + events + event sync + elapsed", median(event_rt), "us",
      "x" + std::to_string(median(event_rt) / median(sync_rt)).substr(0, 5) + " sync");
  add("resolved", "launch + slot + poll record + map", median(slot_rt), "us",
      "x" + std::to_string(median(slot_rt) / median(sync_rt)).substr(0, 5) + " sync");
}

void clock_facts(rig& r, bool quick) {
  std::printf("\n[clock] the device's global timer against the host's steady clock\n");
  constexpr int reads = 8192;
  std::uint64_t* d = nullptr;
  check(cudaMalloc(&d, reads * sizeof(std::uint64_t)), "cudaMalloc");
  read_timer_repeatedly<<<1, 1, 0, r.stream>>>(d, reads);
  check(cudaGetLastError(), "cudaLaunchKernel");
  std::vector<std::uint64_t> h(reads);
  check(cudaMemcpyAsync(h.data(), d, reads * sizeof(std::uint64_t), cudaMemcpyDeviceToHost,
                        r.stream),
        "cudaMemcpyAsync");
  r.sync();
  cudaFree(d);
  std::vector<double> steps;
  for (int i = 1; i < reads; ++i) {
    if (h[i] != h[i - 1]) steps.push_back(static_cast<double>(h[i] - h[i - 1]));
  }
  add("clock", "globaltimer step, min", steps.empty() ? 0 : percentile(steps, 0), "ns");
  add("clock", "globaltimer step, median", median(steps), "ns");

  // Anchors back to back: how tightly one exchange pins the two clocks together.
  std::vector<double> unc;
  for (int i = 0; i < 10; ++i) {
    if (!r.clock.anchor(std::chrono::milliseconds{50})) continue;
    unc.push_back(static_cast<double>(r.clock.anchors().back().uncertainty_ns));
  }
  add("clock", "anchor uncertainty (half round trip), median", median(unc), "ns");
  add("clock", "anchor uncertainty, max of 10", percentile(unc, 1.0), "ns");

  // Epoch: is the global timer wall-clock time?
  const auto last = r.clock.anchors().back();
  const double realtime_ns = static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  add("clock", "globaltimer minus system_clock (realtime) at anchor",
      (static_cast<double>(last.device_ns) - realtime_ns) / 1e6, "ms",
      "near 0 means the timer counts Unix time");

  // Drift and mapping error: anchors a quarter second apart. Before each is added, how far from
  // it does the mapping built so far put its device time? That is the error a kernel timed just
  // before it carries, and it must not grow with the length of the run.
  const int count = quick ? 9 : 17;
  std::vector<lwc::clock_anchor> a;
  std::vector<double> errors;
  std::vector<lwc::clock_segment> first_segment;
  for (int i = 0; i < count; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds{250});
    const std::vector<lwc::clock_segment> before = r.clock.segments();
    while (!r.clock.anchor(std::chrono::milliseconds{50})) {
    }
    a.push_back(r.clock.anchors().back());
    if (i == 0) first_segment = {r.clock.segments().back()};
    if (i >= 3) {
      errors.push_back(std::abs(static_cast<double>(lwc::device_clock::map(before, a.back().device_ns) -
                                                    a.back().host_ns)));
    }
  }
  const auto offset = [](const lwc::clock_anchor& x) {
    return static_cast<double>(x.host_ns) - static_cast<double>(x.device_ns);
  };
  const double seconds = static_cast<double>(a.back().host_ns - a.front().host_ns) / 1e9;
  const double ppm = (offset(a.back()) - offset(a.front())) / (seconds * 1e9) * 1e6;
  add("clock", "drift of globaltimer against steady_clock", ppm, "ppm",
      "over " + std::to_string(seconds).substr(0, 4) + " s");
  add("clock", "mapping error at a new anchor, median |err|", median(errors), "ns",
      std::to_string(errors.size()) + " anchors, 0.25 s apart");
  add("clock", "mapping error at a new anchor, max |err|", percentile(errors, 1.0), "ns");
  add("clock", "same from the first anchor alone (never re-anchored)",
      std::abs(static_cast<double>(lwc::device_clock::map(first_segment, a.back().device_ns) -
                                   a.back().host_ns)),
      "ns", "after " + std::to_string(seconds).substr(0, 4) + " s");

  // Causality: a kernel's mapped window must fall between the host instant before its launch and
  // the host instant after its completion was seen.
  std::vector<double> after_launch, before_seen;
  int violations = 0;
  for (int i = 0; i < 200; ++i) {
    const auto target = r.take();
    const auto before = clock_type::now();
    launch(spin_kernel{2000}, 1, 32, target, r.stream);
    r.close_filled();
    const lwc::device_window w = r.read_last();
    const auto seen = clock_type::now();
    const lw::profile_ticks t = r.clock.to_ticks(w.start, w.end);
    const double x = us_between(before, t.start());
    const double y = us_between(t.end(), seen);
    after_launch.push_back(x);
    before_seen.push_back(y);
    if (x < 0 || y < 0) ++violations;
  }
  r.sync();
  add("clock", "mapped kernel start minus host launch call, median", median(after_launch), "us",
      "min " + std::to_string(percentile(after_launch, 0)).substr(0, 6));
  add("clock", "host sees record minus mapped kernel end, median", median(before_seen), "us",
      "min " + std::to_string(percentile(before_seen, 0)).substr(0, 6));
  add("clock", "windows outside their host bracket (of 200)", violations, "count");
}

void epilogue_cost(rig& r, int reps) {
  std::printf("\n[epilogue] what the per-block timing epilogue costs large grids\n");
  const std::uint64_t n = std::uint64_t{1} << 26;  // 256 MB of floats
  float* out = nullptr;
  check(cudaMalloc(&out, n * sizeof(float)), "cudaMalloc");
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  struct shape {
    const char* label;
    unsigned block;
  } shapes[] = {{"fill 64M floats, 256-unit cubes", 256}, {"fill 64M floats, 32-unit cubes", 32}};
  for (const auto& s : shapes) {
    const dim3 grid{static_cast<unsigned>(n / s.block)};
    std::vector<double> plain, timed;
    for (int rep = -1; rep < reps; ++rep) {
      for (int variant = 0; variant < 2; ++variant) {
        constexpr int per = 10;
        r.records.clear();
        check(cudaEventRecord(a, r.stream), "cudaEventRecord");
        for (int i = 0; i < per; ++i) {
          if (variant == 0) {
            launch(fill_kernel{out, n}, grid, s.block, {}, r.stream);
          } else {
            launch(fill_kernel{out, n}, grid, s.block, r.take(), r.stream);
      r.close_filled();
          }
        }
        check(cudaEventRecord(b, r.stream), "cudaEventRecord");
        r.sync();
        if (variant == 1) (void)r.slot_windows();
        float ms = 0;
        check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
        if (rep >= 0) (variant == 0 ? plain : timed).push_back(ms * 1000.0 / per);
      }
    }
    add("epilogue", std::string{s.label} + ", untimed", median(plain), "us");
    add("epilogue", std::string{s.label} + ", slot-timed", median(timed), "us",
        "x" + std::to_string(median(timed) / median(plain)).substr(0, 5) + " untimed");
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaFree(out);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device visible: nothing to measure\n");
    return 0;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("device 0: %s, %d SMs, driver %d, runtime %d\n", prop.name, prop.multiProcessorCount,
              driver, runtime);

  const std::size_t batch = quick ? 200 : 500;
  const int reps = quick ? 5 : 20;
  rig r{batch};
  issue_costs(r, reps, batch);
  const dim3 wave{static_cast<unsigned>(prop.multiProcessorCount)};
  windows(r, "empty <<<1,32>>>", empty_kernel{}, 1, 32, reps / 2, batch);
  windows(r, "spin 5us <<<SMs,128>>>", spin_kernel{5000}, wave, 128, reps / 4 + 1, batch / 2);
  windows(r, "spin 50us <<<SMs,128>>>", spin_kernel{50000}, wave, 128, reps / 10 + 1, batch / 5);
  resolved_round_trips(r, quick ? 200 : 1000);
  clock_facts(r, quick);
  epilogue_cost(r, quick ? 3 : 10);

  std::printf("\n==== timing mechanism summary (medians, this run) ====\n");
  std::printf("%-9s | %-56s | %12s | %-5s | %s\n", "section", "what", "value", "unit", "note");
  for (const auto& x : table) {
    std::printf("%-9s | %-56s | %12.3f | %-5s | %s\n", x.section.c_str(), x.what.c_str(), x.value,
                x.unit.c_str(), x.note.c_str());
  }
  return 0;
}
