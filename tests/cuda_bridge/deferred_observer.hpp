// An observer for the bridge's CPU tests of CUPTI's kernel records going off and on (timing
// windows, the profiler API range): counts the launches reported and keeps their deferred
// measurements unread, for the test to read once every record had its chance to arrive.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include <launchwatch/observe.hpp>

namespace launchwatch::testing {

class deferred_observer final : public launch_observer {
 public:
  void launched(std::string_view) override { launches_.fetch_add(1); }
  timing_request timing() const override { return timing_request::deferred; }
  void profiled(std::string_view, profile_duration profile) override {
    std::lock_guard lock{mutex_};
    profiles_.push_back(std::move(profile));
  }
  std::uint64_t launches() const { return launches_.load(); }
  std::vector<profile_duration> take_profiles() {
    std::lock_guard lock{mutex_};
    return std::exchange(profiles_, {});
  }

 private:
  std::atomic<std::uint64_t> launches_{0};
  std::mutex mutex_;
  std::vector<profile_duration> profiles_;
};

/// Reads each of `profiles`; returns how many carried a window.
inline std::uint64_t count_measured(std::vector<profile_duration> profiles) {
  std::uint64_t measured = 0;
  for (auto& profile : profiles) measured += std::move(profile).resolve().has_value() ? 1 : 0;
  return measured;
}

}  // namespace launchwatch::testing
