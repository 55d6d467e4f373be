// Observers the launch-cost benchmarks install: one that only counts names, and one that keeps
// every deferred measurement unread (read, or dropped, after the timed loop). Header only, shared by
// the CUDA and Vulkan launch-cost programs so both measure the same observers.
#pragma once

#include <cstddef>
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

}  // namespace launchwatch::bench
