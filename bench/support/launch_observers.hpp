// Observers the launch-cost benchmarks install: one that only counts names, and ones that keep
// every deferred measurement unread (read, or dropped, after the timed loop). Header only, shared
// by the CUDA, Vulkan and CUDA bridge launch-cost programs so they measure the same observers.
#pragma once

#include <cstddef>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>

namespace launchwatch::bench {

/// Counts launches by name only: the cheapest observer there is.
class names_only : public launch_observer {
 public:
  void launched(std::string_view) override { ++count_; }
  std::size_t count_ = 0;
};

/// Asks for deferred timing and keeps every measurement unread.
class keeps_unread : public launch_observer {
 public:
  void launched(std::string_view) override {}
  timing_request timing() const override { return timing_request::deferred; }
  void profiled(std::string_view, profile_duration profile) override {
    kept_.push_back(std::move(profile));
  }
  std::vector<profile_duration> kept_;
};

/// keeps_unread for measurements handed over on any thread (the CUDA bridge hands each over on
/// the thread that launched), under a lock, into storage reserved up front.
class keeps_unread_locked : public launch_observer {
 public:
  explicit keeps_unread_locked(std::size_t reserve) { kept_.reserve(reserve); }
  /// Writes the reserved storage once, so its page faults fall before a timed loop, not in it.
  void touch_storage() {
    while (kept_.size() < kept_.capacity()) {
      kept_.push_back(profile_duration::from_system_time({}, {}));
    }
    kept_.clear();
  }
  void launched(std::string_view) override {}
  timing_request timing() const override { return timing_request::deferred; }
  void profiled(std::string_view, profile_duration profile) override {
    std::lock_guard lock{mutex_};
    kept_.push_back(std::move(profile));
  }
  std::mutex mutex_;
  std::vector<profile_duration> kept_;
};

}  // namespace launchwatch::bench
