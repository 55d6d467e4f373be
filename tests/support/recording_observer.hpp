// The one observer the tests install to see what the launch path told an observer: it records every
// call it gets, in arrival order, and gMock matchers read the record
// (EXPECT_THAT(observer->events(), ElementsAre(Launched("a"), TimedWith(timing_method::device)))).
//
// A test whose point is an observer's own behaviour (one that throws, launches from a callback or
// changes its timing answer mid-pass) keeps a bespoke observer and says why.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>

#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>

namespace launchwatch::testing {

/// Which observer method a recorded event came through.
enum class observer_call { launched, profiled, timed, replayed };

inline std::string_view to_string(observer_call call) {
  switch (call) {
    case observer_call::profiled:
      return "profiled";
    case observer_call::timed:
      return "timed";
    case observer_call::replayed:
      return "replayed";
    case observer_call::launched:
      break;
  }
  return "launched";
}

/// One call an observer got, with what it was told. Fields a call does not carry stay empty.
struct observer_event {
  observer_call call = observer_call::launched;
  /// The kernel's name, copied.
  std::string kernel;
  /// The thread that made the call.
  std::thread::id thread;
  /// launched: the launch_info when it came through `launched_with`; empty when `launched` was
  /// called with the name alone. Its views outlive every launch (observe.hpp), so it may be kept.
  std::optional<launch_info> info;
  /// timed: the length it was told.
  std::chrono::nanoseconds length{0};
  /// timed and profiled: how the measurement was (or will be) taken.
  std::optional<timing_method> method;
  /// profiled: whether the measurement could still be read when it was handed over.
  bool unread = false;
  /// replayed: the node, as told.
  std::optional<replayed_node> node;
};

inline void PrintTo(const observer_event& event, std::ostream* out) {
  *out << to_string(event.call) << "(\"" << event.kernel << "\"";
  if (event.info) *out << ", with launch_info";
  if (event.call == observer_call::timed) *out << ", " << event.length.count() << " ns";
  if (event.method) *out << ", " << to_string(*event.method);
  if (event.call == observer_call::profiled) *out << (event.unread ? ", unread" : ", already read");
  *out << ")";
}

/// A measurement handed to `profiled`, kept unread until the test takes it.
struct kept_profile {
  std::string kernel;
  profile_duration profile;
};

/// Records every call the launch path makes on it and answers `timing()` with the request it was
/// made with. The unread measurements `profiled` receives are kept for the test to take or resolve.
///
/// Thread safety: every method may be called from several threads at once (as the launch path
/// does); the accessors take a snapshot under the same lock, so they are safe while launches run.
class recording_observer : public launch_observer {
 public:
  explicit recording_observer(timing_request request = timing_request::none)
      : request_{request} {}

  void launched(std::string_view kernel) override {
    record(event_of(observer_call::launched, kernel));
  }

  void launched_with(const launch_info& info) override {
    auto event = event_of(observer_call::launched, info.kernel);
    event.info = info;
    record(std::move(event));
  }

  timing_request timing() const override {
    timing_asks_.fetch_add(1, std::memory_order_relaxed);
    return request_;
  }

  void profiled(std::string_view kernel, profile_duration profile) override {
    auto event = event_of(observer_call::profiled, kernel);
    event.method = profile.method();
    event.unread = profile.readable();
    std::lock_guard lock{mutex_};
    events_.push_back(std::move(event));
    kept_.push_back(kept_profile{std::string{kernel}, std::move(profile)});
  }

  void timed(std::string_view kernel, std::chrono::nanoseconds length,
             timing_method method) override {
    auto event = event_of(observer_call::timed, kernel);
    event.length = length;
    event.method = method;
    record(std::move(event));
  }

  /// Every call recorded so far, in arrival order (`timing()` is counted, not recorded: the launch
  /// path asks it at moments a test does not choose).
  std::vector<observer_event> events() const {
    std::lock_guard lock{mutex_};
    return events_;
  }

  /// The events that came through one method, in arrival order.
  std::vector<observer_event> events(observer_call call) const {
    std::lock_guard lock{mutex_};
    std::vector<observer_event> chosen;
    for (const auto& event : events_) {
      if (event.call == call) chosen.push_back(event);
    }
    return chosen;
  }
  std::vector<observer_event> launches() const { return events(observer_call::launched); }
  std::vector<observer_event> timings() const { return events(observer_call::timed); }

  /// The names it was told were launched, in the order they arrived.
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (auto& event : launches()) names.push_back(std::move(event.kernel));
    return names;
  }

  /// How many times `timing()` was asked.
  int timing_asks() const { return timing_asks_.load(std::memory_order_relaxed); }

  /// The measurements kept since the last take, unread, in arrival order; the events stay.
  std::vector<kept_profile> take_profiles() {
    std::lock_guard lock{mutex_};
    return std::exchange(kept_, {});
  }

  /// Takes the kept measurements and reads each (blocking until its window has closed): the
  /// kernel's name and its ticks, empty where the window carried no measurement.
  std::vector<std::pair<std::string, std::optional<profile_ticks>>> resolve_profiles() {
    std::vector<std::pair<std::string, std::optional<profile_ticks>>> resolved;
    for (auto& kept : take_profiles()) {
      resolved.emplace_back(kept.kernel, std::move(kept.profile).resolve());
    }
    return resolved;
  }

 protected:
  static observer_event event_of(observer_call call, std::string_view kernel) {
    observer_event event;
    event.call = call;
    event.kernel = kernel;
    event.thread = std::this_thread::get_id();
    return event;
  }

  void record(observer_event event) {
    std::lock_guard lock{mutex_};
    events_.push_back(std::move(event));
  }

 private:
  timing_request request_;
  mutable std::atomic<int> timing_asks_{0};
  mutable std::mutex mutex_;
  std::vector<observer_event> events_;
  std::vector<kept_profile> kept_;
};

/// A recording_observer that also watches graph replays (graph_replay_observer), recording each
/// replayed node. A separate type because watching replays is opted into by the type: a plain
/// recording_observer is an observer that does not watch them.
class replay_recording_observer : public recording_observer, public graph_replay_observer {
 public:
  using recording_observer::recording_observer;

  void replayed(const replayed_node& node) override {
    auto event = event_of(observer_call::replayed, node.kernel);
    event.method = timing_method::device;
    event.node = node;
    record(std::move(event));
  }

  std::vector<observer_event> replays() const { return events(observer_call::replayed); }
};

// Matchers over observer_event (gMock's naming, so they read like its own).

/// Any `launched` or `launched_with` call.
MATCHER(Launched, "is a launch") { return arg.call == observer_call::launched; }

/// A launch of `kernel`.
MATCHER_P(Launched, kernel, "is a launch of \"" + std::string{kernel} + "\"") {
  return arg.call == observer_call::launched && arg.kernel == kernel;
}

/// A launch reported through `launched_with`, whose launch_info matches `info_matcher`.
MATCHER_P(LaunchedWith, info_matcher,
          "is a launch reported with a launch_info that " +
              ::testing::DescribeMatcher<const launch_info&>(info_matcher)) {
  return arg.call == observer_call::launched && arg.info.has_value() &&
         ::testing::ExplainMatchResult(info_matcher, *arg.info, result_listener);
}

/// A `timed` call for `kernel` of `length`, measured by `method`.
MATCHER_P3(Timed, kernel, length, method,
           "is timed(\"" + std::string{kernel} + "\", " +
               std::to_string(std::chrono::nanoseconds{length}.count()) + " ns, " +
               std::string{to_string(method)} + ")") {
  return arg.call == observer_call::timed && arg.kernel == kernel &&
         arg.length == std::chrono::nanoseconds{length} && arg.method == method;
}

/// A `timed` call measured by `method`.
MATCHER_P(TimedWith, method, "is timed by " + std::string{to_string(method)}) {
  return arg.call == observer_call::timed && arg.method == method;
}

/// A `profiled` call for `kernel`.
MATCHER_P(Profiled, kernel, "is profiled(\"" + std::string{kernel} + "\")") {
  return arg.call == observer_call::profiled && arg.kernel == kernel;
}

/// A `profiled` call whose measurement could still be read when it was handed over.
MATCHER(ProfiledUnread, "is profiled, handed over unread") {
  return arg.call == observer_call::profiled && arg.unread;
}

/// A replayed node of `kernel`.
MATCHER_P(Replayed, kernel, "is a replayed node of \"" + std::string{kernel} + "\"") {
  return arg.call == observer_call::replayed && arg.kernel == kernel;
}

/// Any call made on `thread`.
MATCHER_P(OnThread, thread, "is a call made on the expected thread") {
  return arg.thread == thread;
}

}  // namespace launchwatch::testing
