// Measurements the tests hand the launch path (measured, measured_on_device, measured_while), and
// three one-call observers that recording_observer.hpp replaces: recorder, timer and keeper stay
// only until the tests still using them (tests/runtime, tests/conformance, tests/cuda,
// tests/cuda_bridge) are converted; new tests use recording_observer.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <launchwatch/observe.hpp>

namespace launchwatch::testing {

/// Records the names it is told were launched, in order.
class recorder : public launch_observer {
 public:
  void launched(std::string_view kernel) override {
    std::lock_guard lock{mutex_};
    names_.emplace_back(kernel);
  }
  std::vector<std::string> names() const {
    std::lock_guard lock{mutex_};
    return names_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> names_;
};

using timed_call = std::tuple<std::string, std::chrono::nanoseconds, timing_method>;

/// Asks for resolved timing and records what `timed` is told.
class timer : public launch_observer {
 public:
  explicit timer(timing_request request = timing_request::resolved) : request_{request} {}
  void launched(std::string_view) override {}
  timing_request timing() const override { return request_; }
  void timed(std::string_view kernel, std::chrono::nanoseconds length,
             timing_method method) override {
    std::lock_guard lock{mutex_};
    calls_.emplace_back(std::string{kernel}, length, method);
  }
  std::vector<timed_call> calls() const {
    std::lock_guard lock{mutex_};
    return calls_;
  }

 private:
  timing_request request_;
  mutable std::mutex mutex_;
  std::vector<timed_call> calls_;
};

/// Asks for deferred timing and keeps each measurement unread, with its kernel's name.
class keeper : public timer {
 public:
  keeper() : timer{timing_request::deferred} {}
  void profiled(std::string_view kernel, profile_duration profile) override {
    std::lock_guard lock{mutex_};
    kept_.emplace_back(std::string{kernel}, std::move(profile));
  }
  std::vector<std::pair<std::string, profile_duration>> take() {
    std::lock_guard lock{mutex_};
    return std::exchange(kept_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::string, profile_duration>> kept_;
};

/// A measurement of `length` taken on the host, as a backend without device timestamps hands one
/// over: reading it waits on nothing.
inline profile_duration measured(std::chrono::nanoseconds length) {
  const auto start = std::chrono::steady_clock::now();
  return profile_duration::from_system_time(start, start + length);
}

/// The same, claiming the device clock.
inline profile_duration measured_on_device(std::chrono::nanoseconds length) {
  const auto start = std::chrono::steady_clock::now();
  return profile_duration{
      [ticks = profile_ticks::from_start_end(start, start + length)]() -> std::optional<profile_ticks> {
        return ticks;
      },
      timing_method::device};
}

/// A measurement whose read runs `during_the_read` first, the way a pass that ends while its last
/// kernel is still running drops its observation under the read.
template <class F>
profile_duration measured_while(std::chrono::nanoseconds length, F during_the_read) {
  const auto start = std::chrono::steady_clock::now();
  return profile_duration{[=]() mutable -> std::optional<profile_ticks> {
                            during_the_read();
                            return profile_ticks::from_start_end(start, start + length);
                          },
                          timing_method::system};
}

}  // namespace launchwatch::testing
