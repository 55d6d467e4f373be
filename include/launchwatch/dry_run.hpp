// Dry runs: launches that are validated, prepared and reported, but never executed.
//
// A dry run answers "what would this pass launch?" without running it: the kernels are still
// checked against the device and still reach the observer, so counting and attributing them costs
// no device time and leaves every buffer as it was.
#pragma once

#include <atomic>

namespace launchwatch {

class dry_run_scope;
class real_run_scope;
bool dry_run() noexcept;

namespace detail {
/// The depths of the scopes in force, readable only through dry_run() and changed only by the
/// scopes: no other code can turn a dry run on or off behind their backs.
class dry_run_state {
  static inline std::atomic<int> depth_{0};
  static inline thread_local int real_depth_ = 0;
  friend class ::launchwatch::dry_run_scope;
  friend class ::launchwatch::real_run_scope;
  friend bool ::launchwatch::dry_run() noexcept;
};
}  // namespace detail

/// Whether a launch is executed or only validated, prepared and reported.
enum class launch_mode {
  execute,  ///< Submitted to the device.
  skip,     ///< Validated, prepared and reported, then dropped.
};

/// Turns every launch in the process into a dry run while it lives.
///
/// Process-wide, like the observer slot, because a pass spreads over threads and clients. Nests: the
/// dry run lasts until the outermost scope ends. No environment variable turns a dry run on, so a
/// stray setting can never make real work silently do nothing.
///
/// Thread safety: any thread may create and destroy one. Launches racing with its start or end may
/// land on either side. Cost: one relaxed atomic increment and decrement.
class [[nodiscard]] dry_run_scope {
 public:
  dry_run_scope() noexcept { detail::dry_run_state::depth_.fetch_add(1, std::memory_order_relaxed); }
  ~dry_run_scope() { detail::dry_run_state::depth_.fetch_sub(1, std::memory_order_relaxed); }
  dry_run_scope(const dry_run_scope&) = delete;
  dry_run_scope& operator=(const dry_run_scope&) = delete;
  dry_run_scope(dry_run_scope&&) = delete;
  dry_run_scope& operator=(dry_run_scope&&) = delete;
};

/// Makes the current thread execute its launches even inside a dry run, while it lives.
///
/// For the work a dry run still needs done for real (building inputs, say). Per thread, because only
/// the issuing thread knows what it is doing; nests. Cost: a thread-local increment and decrement.
class [[nodiscard]] real_run_scope {
 public:
  real_run_scope() noexcept { ++detail::dry_run_state::real_depth_; }
  ~real_run_scope() { --detail::dry_run_state::real_depth_; }
  real_run_scope(const real_run_scope&) = delete;
  real_run_scope& operator=(const real_run_scope&) = delete;
  real_run_scope(real_run_scope&&) = delete;
  real_run_scope& operator=(real_run_scope&&) = delete;
};

/// Whether a launch issued now, on this thread, would be skipped.
///
/// An observer calls this from `launched` to tell a dry launch from a real one: both are reported,
/// and a duration measured over a dry launch has no kernel under it.
/// Cost: one relaxed load, and a thread-local read when a dry run is on.
[[nodiscard]] inline bool dry_run() noexcept {
  return detail::dry_run_state::depth_.load(std::memory_order_relaxed) > 0 &&
         detail::dry_run_state::real_depth_ == 0;
}

/// The mode a launch issued now, on this thread, runs in. The launch path decides it on the issuing
/// thread because only that thread knows whether it is inside a real_run_scope.
[[nodiscard]] inline launch_mode current_launch_mode() noexcept {
  return dry_run() ? launch_mode::skip : launch_mode::execute;
}

}  // namespace launchwatch
