// The process-wide observer slot, and how the launch path calls into observers.
//
// Defined in observation_slot.cpp; shared by observe.cpp (installing and dropping observations),
// launch_path.cpp (reporting launches and delivering their measurements) and launch_sources.cpp
// (what other launch sources ask of the slot). Private to core: a launch source outside it uses
// launch_path.hpp.
#pragma once

#include <launchwatch/config.hpp>
#include <launchwatch/observe.hpp>

#include <cstdint>
#include <exception>
#include <memory>
#include <string_view>
#include <utility>

#include "core/interface/diagnostics.hpp"
#include "core/interface/reader_lock.hpp"

namespace launchwatch::detail {

/// The slot: the stack of live observations and, for launches, a copy of the top one's observer and
/// its observation's serial. Reporting a launch takes the shared lock; installing or dropping takes
/// the exclusive one.
struct observation_stack {
  distributed_shared_mutex mutex;
  launch_observation* top = nullptr;
  std::shared_ptr<launch_observer> installed;
  /// The serial of the observation whose observer is installed; 0 when none is. Serials are never
  /// reused, so a launch that keeps its observation's serial can tell, later, whether that same
  /// observation is installed, without keeping the observer alive (no reference count touched).
  std::uint64_t installed_serial = 0;

  static observation_stack& get();

  void push(launch_observation& observation);
  void remove(launch_observation& observation);
  // Held exclusively across fork(), first of the fork's locks (fork_locks.hpp,
  // observation_slot.cpp), so a child never inherits a reader count of a thread it does not have.
};

/// How deep this thread is inside observer methods. An observer that launches or installs from
/// inside one would take the slot's lock again (deadlock on install, undefined on a nested read).
inline thread_local int callback_depth = 0;

[[noreturn]] void fail_reentry(const char* what);

inline void check_not_in_callback([[maybe_unused]] const char* what) {
#if LAUNCHWATCH_CHECK_REENTRY
  if (callback_depth > 0) [[unlikely]] {
    fail_reentry(what);
  }
#endif
}

struct in_callback {
  in_callback() noexcept { ++callback_depth; }
  ~in_callback() { --callback_depth; }
  in_callback(const in_callback&) = delete;
  in_callback& operator=(const in_callback&) = delete;
};

void report_observer_threw(const char* method, std::string_view kernel, const char* what);

/// Runs an observer method with reentry tracked and exceptions contained: an observer's fault must
/// never fail the launch that it watches.
template <class Call>
void call_observer(const char* method, std::string_view kernel, Call&& call) noexcept {
  in_callback marked;
  try {
    std::forward<Call>(call)();
  } catch (const std::exception& error) {
    report_observer_threw(method, kernel, error.what());
  } catch (...) {
    report_observer_threw(method, kernel, "an exception not derived from std::exception");
  }
}

/// The observer's timing(), contained: an observer whose timing() throws asks for none.
inline timing_request ask_timing(const launch_observer& observer) noexcept {
  auto answer = timing_request::none;
  call_observer("timing", "", [&] { answer = observer.timing(); });
  return answer;
}

}  // namespace launchwatch::detail
