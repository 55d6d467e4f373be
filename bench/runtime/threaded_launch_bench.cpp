// What an unobserved launch costs when several threads launch at once (review finding 7): each
// thread launches, on the CPU backend, a kernel that reads one weight buffer every thread shares
// and writes one buffer of its own, the way the layers of a model share their weights. A launch
// looks up both spans' allocations and records both uses; any lock or reference count those steps
// share between threads shows here as a cost that grows with the thread count.
//
// Written against the public API only, so the same file measures two builds side by side
// (scripts/bench_before_after.sh builds it against a base commit and against this tree).
//
//   launchwatch_threaded_launch_bench [--threads 1,2,4,16] [--launches 100000] [--rounds 5]
//
// Prints, per thread count, the median over rounds of the wall time per launch seen by the
// issuing threads (each thread's own launches, timed in batches, its queue drained between them
// with the timer stopped), and the ratio to one thread.

#include <launchwatch/launchwatch.hpp>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

struct uses_weights {
  launchwatch::device_span<const float> weights;
  launchwatch::device_span<float> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit u) const {
    const auto i = u.absolute_pos();
    if (i < out.size()) out[i] = weights[i];
  }
};

constexpr std::int64_t batch = 1024;

std::vector<int> parse_list(std::string_view text) {
  std::vector<int> values;
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = text.find(',', at);
    const auto piece = text.substr(at, comma == std::string_view::npos ? text.npos : comma - at);
    if (!piece.empty()) values.push_back(std::stoi(std::string{piece}));
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return values;
}

/// One round: `threads` threads each issue `launches` launches; returns the mean wall time per
/// launch of the issuing threads, in nanoseconds (each thread's timed batches summed, averaged).
double round_ns(launchwatch::client& client, const launchwatch::buffer<float>& weights,
                int threads, std::int64_t launches) {
  std::barrier start{threads};
  std::vector<double> per_thread(static_cast<std::size_t>(threads), 0.0);
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      auto out = client.empty<float>(64);
      const uses_weights kernel{weights.view(), out.view()};
      // Warm: this thread's stream and worker exist, and the allocation knows the stream.
      client.launch(kernel, launchwatch::cube_count{1u}, launchwatch::cube_dim{1u});
      client.sync();
      start.arrive_and_wait();
      std::chrono::nanoseconds spent{0};
      for (std::int64_t done = 0; done < launches; done += batch) {
        const auto began = std::chrono::steady_clock::now();
        for (std::int64_t i = 0; i < batch; ++i) {
          client.launch(kernel, launchwatch::cube_count{1u}, launchwatch::cube_dim{1u});
        }
        spent += std::chrono::steady_clock::now() - began;
        client.sync();
      }
      per_thread[static_cast<std::size_t>(t)] =
          static_cast<double>(spent.count()) / static_cast<double>(launches);
    });
  }
  for (auto& r : running) r.join();
  double sum = 0;
  for (const double v : per_thread) sum += v;
  return sum / threads;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts{1, 2, 4, 16};
  std::int64_t launches = 100'000;
  int rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag{argv[i]};
    if (flag == "--threads") {
      thread_counts = parse_list(argv[i + 1]);
    } else if (flag == "--launches") {
      launches = std::max<std::int64_t>(batch, std::atoll(argv[i + 1]) / batch * batch);
    } else if (flag == "--rounds") {
      rounds = std::max(1, std::atoi(argv[i + 1]));
    } else {
      std::fprintf(stderr, "unknown flag %s; use --threads 1,2,4,16 --launches N --rounds R\n",
                   argv[i]);
      return 2;
    }
  }
  auto client = launchwatch::client::cpu();
  const auto weights = client.create<float>(std::vector<float>(64, 1.0f));
  std::printf("threaded launches, CPU backend, %lld launches a thread, median of %d rounds, %u "
              "hardware threads\n",
              static_cast<long long>(launches), rounds, std::thread::hardware_concurrency());
  std::printf("%8s  %14s  %10s\n", "threads", "ns per launch", "vs 1");
  double one = 0;
  for (const int threads : thread_counts) {
    std::vector<double> samples;
    for (int r = 0; r < rounds; ++r) samples.push_back(round_ns(client, weights, threads, launches));
    std::sort(samples.begin(), samples.end());
    const double median = samples[samples.size() / 2];
    if (one == 0) one = median;
    std::printf("%8d  %14.1f  %9.2fx\n", threads, median, median / one);
    std::fflush(stdout);
  }
  return 0;
}
