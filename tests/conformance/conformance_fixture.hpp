// What every suite of the backend conformance suite shares: the observers its tests install and
// the fixture they start from. See conformance_suite.hpp for how a backend runs the suites.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/dry_run.hpp>
#include <launchwatch/logger.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/runtime/client.hpp>

#include "conformance/conformance_kernels.hpp"
#include "support/capturing_sink.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch::conformance {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// Observers the suite installs.

/// Keeps everything it is told about each launch: the launch_info, the thread it was told on, and
/// whether that thread was in a dry run at the time (which testing::recording_observer does not
/// record: only the dry-run suite asks).
class info_recorder : public launch_observer {
 public:
  struct seen {
    launch_info info;
    std::thread::id thread;
    bool dry_run;
  };

  void launched(std::string_view) override {}
  void launched_with(const launch_info& info) override {
    std::lock_guard lock{mutex_};
    seen_.push_back(seen{info, std::this_thread::get_id(), launchwatch::dry_run()});
  }
  std::vector<seen> all() const {
    std::lock_guard lock{mutex_};
    return seen_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<seen> seen_;
};

/// Counts launches, from any number of threads.
class counter : public launch_observer {
 public:
  void launched(std::string_view) override { count_.fetch_add(1, std::memory_order_relaxed); }
  std::size_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::size_t> count_{0};
};

/// Answers `deferred` the first time it is asked, and `none` after: an observer that broke the rule
/// that its answer is constant. The launch path asks once per launch, so what it answered then is
/// what its launch gets.
class fickle : public testing::recording_observer {
 public:
  fickle() : recording_observer{timing_request::deferred} {}
  timing_request timing() const override {
    asked_.fetch_add(1);
    return asked_.load() > 1 ? timing_request::none : timing_request::deferred;
  }
  int asked() const { return asked_.load(); }

 private:
  mutable std::atomic<int> asked_{0};
};

/// Throws from `launched`.
class thrower : public launch_observer {
 public:
  void launched(std::string_view) override { throw std::runtime_error{"observer broke"}; }
};

/// Puts the profiling logger back as a fresh process has it, on every way out of a test.
struct logger_reset {
  logger_reset() = default;
  logger_reset(const logger_reset&) = delete;
  logger_reset& operator=(const logger_reset&) = delete;
  ~logger_reset() { detail::reset_profiling_logger_for_testing(); }
};

// ---------------------------------------------------------------------------------------------
// Fixtures.

/// What every suite's tests start from: a client of the backend's device 0, or a skip saying why
/// the backend cannot run here. Each suite derives a fixture of its own from it, since a typed
/// suite is named after its fixture.
template <class Backend>
class backend_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = Backend::unavailable()) GTEST_SKIP() << *why;
    client_.emplace(Backend::make_client());
  }

  launchwatch::client& client() { return *client_; }

  std::optional<launchwatch::client> client_;
};

}  // namespace launchwatch::conformance
