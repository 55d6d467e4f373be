// Launches a few kernels on the CPU backend under an observer, then prints what the observer saw:
// which kernels ran, how often, and how long each took on the device's clock.
//
// The observer asks for deferred timing: each launch's measurement is handed over unread, so the
// kernels run back to back, and the observer reads them all once the pass is over.

#include <launchwatch/launchwatch.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

// Kernels: function objects whose fields are their arguments.

/// y += a * x
struct axpy {
  float a;
  launchwatch::device_span<const float> x;
  launchwatch::device_span<float> y;
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit u) const {
    auto i = u.absolute_pos();
    if (i < y.size()) y[i] += a * x[i];
  }
};

/// values *= factor
struct scale {
  float factor;
  launchwatch::device_span<float> values;
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit u) const {
    auto i = u.absolute_pos();
    if (i < values.size()) values[i] *= factor;
  }
};

/// Keeps every launch's name and its measurement, unread, until the pass is over.
class pass_observer : public launchwatch::launch_observer {
 public:
  void launched(std::string_view kernel) override {
    std::lock_guard lock{mutex_};
    ++counts_[std::string{kernel}];
  }
  launchwatch::timing_request timing() const override {
    return launchwatch::timing_request::deferred;
  }
  void profiled(std::string_view kernel, launchwatch::profile_duration profile) override {
    std::lock_guard lock{mutex_};
    kept_.emplace_back(kernel, std::move(profile));
  }
  // Called instead of `profiled` when the profiling logger (LAUNCHWATCH_PROFILE) reads timings too.
  void timed(std::string_view kernel, std::chrono::nanoseconds length,
             launchwatch::timing_method) override {
    std::lock_guard lock{mutex_};
    time_[std::string{kernel}] += length;
  }

  /// Reads the kept measurements (each waits for its kernel) and prints one line per kernel.
  void print() {
    std::lock_guard lock{mutex_};
    for (auto& [kernel, profile] : kept_) {
      if (auto ticks = std::move(profile).resolve()) time_[std::string{kernel}] += ticks->length();
    }
    kept_.clear();
    std::printf("%-14s %8s %14s\n", "kernel", "launches", "device time");
    for (const auto& [kernel, count] : counts_) {
      const auto name = launchwatch::format_kernel_name(kernel, launchwatch::name_format::brief);
      const auto micros = std::chrono::duration<double, std::micro>(time_[kernel]).count();
      std::printf("%-14s %8d %11.1f us\n", name.c_str(), count, micros);
    }
  }

  int launches() const {
    std::lock_guard lock{mutex_};
    int total = 0;
    for (const auto& [kernel, count] : counts_) total += count;
    return total;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int> counts_;
  std::map<std::string, std::chrono::nanoseconds> time_;
  std::vector<std::pair<std::string_view, launchwatch::profile_duration>> kept_;
};

}  // namespace

int main() {
  auto client = launchwatch::client::cpu();
  const std::size_t n = 1 << 20;
  std::vector<float> ones(n, 1.0f);
  auto x = client.create<float>(ones);
  auto y = client.empty<float>(n);
  const launchwatch::cube_count blocks{(n + 255) / 256};

  auto observer = std::make_shared<pass_observer>();
  {
    launchwatch::launch_observation watching{observer};
    for (int step = 0; step < 3; ++step) {
      client.launch(axpy{2.0f, x.view(), y.view()}, blocks, launchwatch::cube_dim{256});
      client.launch(scale{0.5f, y.view()}, blocks, launchwatch::cube_dim{256});
    }
  }
  const std::vector<float> result = client.read(y);
  client.sync();

  std::printf("launchwatch saw %d launches on %s:\n", observer->launches(),
              client.device_name().c_str());
  observer->print();

  // y = ((0 + 2) / 2 + 2) / 2 ... three times: 1, 1.5, 1.75.
  const bool correct = result.front() == 1.75f && result.back() == 1.75f;
  std::printf("result: y[0] = %.2f (%s)\n", result.front(), correct ? "as expected" : "WRONG");
  return correct && observer->launches() == 6 ? 0 : 1;
}
