// launchwatch's own host cost on a GPU launch, without the GPU: the CUDA and HIP backends' shared
// code (src/backend/gpu) over the runtime emulated on the host (tests/host_gpu), whose kernel
// launch runs the kernel's CPU entry. The raw row calls that launch directly, as a program calls
// cudaLaunchKernel; the others go through client.launch, so each row's excess over raw is what
// launchwatch adds to a launch: the launch path, the stream's side (its lock, ordering point and
// device guard) and, when timed, the timing collector (slot, record, batch) and the measurement's
// hand-over. On the H200 the driver's call (about 3.8 us) comes on top of both rows alike.
//
// Rows are measured side by side: every round times each row over the same number of launches of
// an empty kernel (one cube of one unit), the rows' order rotating between rounds, in the issuing
// thread's CPU time; the figures are medians over rounds with p10-p90, and each row's excess over
// raw is the median of its per-round differences.
//
//   launchwatch_gpu_launch_path_bench [--rounds R] [--launches N] [--only ROW]
//
// --only ROW runs one row (0 raw, 1 raw stamping, 2 untimed, 3 names-only, 4 deferred) R times and
// prints nothing: for a profiler (perf record -g ... --only 4).

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <launchwatch/launchwatch.hpp>
#include <launchwatch/detail/device_entry.hpp>

#include "host_gpu_runtime.hpp"
#include "support/launch_observers.hpp"

namespace {

namespace lw = launchwatch;
using runtime = lw::testing::host_gpu::host_gpu_runtime;

struct nothing {
  LAUNCHWATCH_HOST_DEVICE void operator()(lw::unit) const {}
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(p * static_cast<double>(values.size() - 1))];
}

/// The calling thread's CPU time: what the issuing thread spends, whatever the machine's other
/// threads do (the timing collector's thread, which on this emulation also copies the slots back,
/// and the clock's keeper; on a small machine they would otherwise preempt the launching thread).
double thread_cpu_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

/// The raw rows, which every other row is compared with: the plain call, and the one that stamps a
/// slot as a timed kernel does on the device.
constexpr std::size_t raw_row = 0;
constexpr std::size_t raw_stamping_row = 1;

struct row {
  const char* name;
  std::function<void(int)> launch_n;  // launches n kernels
  std::function<void()> between;      // after a round, untimed
  std::size_t floor;                   // the raw row doing the same on the device
  std::vector<double> ns;              // per launch, one entry a round
};

}  // namespace

int main(int argc, char** argv) {
  int rounds = 30;
  int launches = 2000;
  int only = -1;  // --only K: time row K alone (for a profiler), no table
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--launches") == 0) launches = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--only") == 0) only = std::atoi(argv[i + 1]);
  }
  if (rounds < 1 || launches < 1) {
    std::fprintf(stderr, "usage: %s [--rounds R] [--launches N] (both at least 1)\n", argv[0]);
    return 2;
  }

  // Every operation inside its call: the issuing thread's own cost, with no stream thread running
  // the kernels beside it.
  lw::testing::host_gpu::run_kernels_inside_the_launch(true);
  lw::client client = lw::testing::host_gpu::open_client();
  runtime::stream_handle stream = nullptr;
  if (runtime::stream_create(&stream) != runtime::success) return 1;
  const nothing kernel{};
  const lw::detail::launch_geometry one{lw::cube_count{1}, lw::cube_dim{1}};
  const void* entry = reinterpret_cast<const void*>(&lw::detail::cpu_entry<nothing>);
  runtime::function_handle function{};
  (void)runtime::find_function(&function, entry);

  auto names = std::make_shared<lw::bench::names_only>();
  auto deferred = std::make_shared<lw::bench::keeps_unread>();
  deferred->kept_.reserve(static_cast<std::size_t>(launches));

  std::size_t timed_launches = 0;  // deferred launches that got a measurement (not out of slots)
  std::vector<row> rows;
  rows.push_back({"raw launch (the API's call)",
                  [&](int n) {
                    for (int i = 0; i < n; ++i) {
                      lw::detail::timing_target target{};
                      void* arguments[] = {const_cast<nothing*>(&kernel), &target};
                      (void)runtime::launch_kernel(function, entry, one, arguments, stream);
                    }
                  },
                  [] {},
                  raw_row,
                  {}});
  // The emulated device's own part of a timed launch (its entry stamps the slot with two clock
  // reads, which a GPU's timer makes for free): the floor the deferred row is compared with.
  auto* stamped = static_cast<lw::detail::timing_slot*>(
      std::aligned_alloc(alignof(lw::detail::timing_slot), sizeof(lw::detail::timing_slot)));
  rows.push_back({"raw launch, stamping a slot",
                  [&](int n) {
                    for (int i = 0; i < n; ++i) {
                      lw::detail::timing_target target{stamped};
                      void* arguments[] = {const_cast<nothing*>(&kernel), &target};
                      (void)runtime::launch_kernel(function, entry, one, arguments, stream);
                    }
                  },
                  [&] { std::memset(static_cast<void*>(stamped), 0, sizeof *stamped); },
                  raw_row,
                  {}});
  rows.push_back({"client.launch, nothing observing",
                  [&](int n) {
                    for (int i = 0; i < n; ++i)
                      client.launch(kernel, lw::cube_count{1}, lw::cube_dim{1});
                  },
                  [] {},
                  raw_row,
                  {}});
  rows.push_back({"client.launch, names-only observer",
                  [&](int n) {
                    lw::launch_observation watching{names};
                    for (int i = 0; i < n; ++i)
                      client.launch(kernel, lw::cube_count{1}, lw::cube_dim{1});
                  },
                  [] {},
                  raw_row,
                  {}});
  rows.push_back({"client.launch, deferred (kept unread)",
                  [&](int n) {
                    lw::launch_observation watching{deferred};
                    for (int i = 0; i < n; ++i)
                      client.launch(kernel, lw::cube_count{1}, lw::cube_dim{1});
                  },
                  [&] {
                    timed_launches += deferred->kept_.size();
                    // The last measurement read, untimed: the collector has caught up before the
                    // next round, as it keeps up with a GPU's launches. Emulated, it copies each
                    // batch's slots with the CPU, slower than this thread launches; a backlog
                    // carried into the next round would bill this thread for waking it.
                    if (!deferred->kept_.empty()) (void)std::move(deferred->kept_.back()).resolve();
                    deferred->kept_.clear();
                  },
                  raw_stamping_row,
                  {}});

  // Warm-up rounds, not counted: first-use allocations, the clock's first anchor, and the timing
  // slots' blocks (allocated and zeroed on first use, up to the budget, while the collector thread
  // has not yet handed blocks back), so the rounds measure the steady state.
  for (int warm = 0; warm < 5; ++warm) {
    for (row& r : rows) {
      r.launch_n(launches);
      r.between();
    }
  }
  client.sync();
  if (only >= 0 && static_cast<std::size_t>(only) < rows.size()) {
    for (int round = 0; round < rounds; ++round) {
      rows[static_cast<std::size_t>(only)].launch_n(launches);
      rows[static_cast<std::size_t>(only)].between();
    }
    return 0;
  }
  timed_launches = 0;
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t k = 0; k < rows.size(); ++k) {
      row& r = rows[(k + static_cast<std::size_t>(round)) % rows.size()];
      const double began = thread_cpu_ns();
      r.launch_n(launches);
      r.ns.push_back((thread_cpu_ns() - began) / launches);
      r.between();
      client.sync();
    }
  }
  (void)runtime::stream_destroy(stream);
  std::free(stamped);

  std::printf("launchwatch's host cost per GPU launch, over the host-emulated GPU runtime\n");
  std::printf("%d rounds of %d launches of an empty kernel (1 cube x 1 unit), rows interleaved\n\n",
              rounds, launches);
  std::printf("%-40s %10s %19s %14s %19s\n", "row", "ns/launch", "p10-p90", "over raw, ns",
              "p10-p90");
  std::printf("(the deferred row over the raw launch that stamps a slot; the others over the plain one)\n");
  // Each row against the raw launch that does the same on the device: the timed row against the
  // one that stamps a slot, the rest against the plain one.
  for (const row& r : rows) {
    const std::vector<double>& floor = rows[r.floor].ns;
    std::vector<double> excess;
    for (std::size_t i = 0; i < r.ns.size(); ++i) excess.push_back(r.ns[i] - floor[i]);
    std::printf("%-40s %10.1f %9.1f-%-9.1f %14.1f %9.1f-%-9.1f\n", r.name, percentile(r.ns, 0.5),
                percentile(r.ns, 0.1), percentile(r.ns, 0.9), percentile(excess, 0.5),
                percentile(excess, 0.1), percentile(excess, 0.9));
  }
  std::printf("\ndeferred launches handed a measurement: %zu of %lld (the rest found every timing "
              "slot in flight and went untimed)\n",
              timed_launches, static_cast<long long>(rounds) * launches);
  return 0;
}
