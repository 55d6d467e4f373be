// Observers the peers harness installs: what a user would write against the observer contract,
// from the cheapest (names only) to keeping every measurement.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>

namespace launchwatch::peers {

// Counts launches by name: the cheapest thing an observer can do.
class names_only_observer final : public launch_observer {
 public:
  void launched(std::string_view kernel) override {
    last_ = kernel.data();
    ++count_;
  }
  std::uint64_t take_count() noexcept { return std::exchange(count_, 0); }

 private:
  std::uint64_t count_ = 0;
  const char* volatile last_ = nullptr;
};

// Keeps every measurement unread and reads them once the batch is over.
class deferred_observer final : public launch_observer {
 public:
  explicit deferred_observer(std::size_t reserve) { pending_.reserve(reserve); }
  void launched(std::string_view) override {}
  timing_request timing() const override { return timing_request::deferred; }
  void profiled(std::string_view, profile_duration profile) override {
    pending_.push_back(std::move(profile));
  }
  // Reads every kept measurement; returns how many carried ticks.
  std::uint64_t resolve_all() {
    std::uint64_t measured = 0;
    for (auto& p : pending_) {
      if (std::move(p).resolve().has_value()) ++measured;
    }
    pending_.clear();
    return measured;
  }

 private:
  std::vector<profile_duration> pending_;
};

// Takes each kernel's length as the launch path reads it on the issuing thread.
class resolved_observer final : public launch_observer {
 public:
  void launched(std::string_view) override {}
  timing_request timing() const override { return timing_request::resolved; }
  void timed(std::string_view, std::chrono::nanoseconds length, timing_method) override {
    total_ += length;
    ++count_;
  }
  std::uint64_t take_count() noexcept { return std::exchange(count_, 0); }

 private:
  std::chrono::nanoseconds total_{0};
  std::uint64_t count_ = 0;
};

}  // namespace launchwatch::peers
