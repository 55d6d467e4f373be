// Scopes: what the issuing thread is doing, named by the caller, so each kernel launch can be
// paired with it.
//
// A kernel's own name says what it computes, not what it is for: the same matmul serves attention
// and the MLP. The caller is the only one who knows, and only at the moment it launches, so it names
// its work with a scope and an attribution observer reads the thread's innermost scope path at each
// launch.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace launchwatch {

namespace detail {

/// Set while at least one `attribution` lives, cleared when the last one is destroyed, and set for
/// good when an NVTX tool is attached (scopes then go to it too): the one flag every scope reads.
/// Inline so the load is visible at every scope's construction.
inline std::atomic<bool> attributing{false};

/// What a scope that was entered needs to leave: its frame on the thread's scope stack and the
/// serial that frame was given, so a frame already popped (by an enclosing scope destroyed first)
/// is recognised and not popped twice. `serial == 0` means the scope was never entered.
struct scope_token {
  std::uint32_t depth = 0;
  std::uint32_t serial = 0;
};

/// Pushes `name` onto the calling thread's scope path and notes when it began.
///
/// Never throws: a scope that cannot be recorded (out of memory) is not entered, and the pass loses
/// that scope rather than the caller's work failing.
scope_token enter_scope(std::string_view name) noexcept;

/// Pops the scope `token` entered, and any scope entered inside it still open, recording each
/// one's interval for the attribution collecting host scopes.
void leave_scope(scope_token token) noexcept;

}  // namespace detail

/// Names what the calling thread is doing until the end of the enclosing C++ scope.
///
/// Scopes nest per thread into a path (`model/layer 3/attention`); an `attribution` pairs every
/// launch with the issuing thread's path at the moment of the launch, and records each scope's
/// start and end for the trace's host thread tracks. A guard rather than a begin/end pair so an
/// early return or an exception can never leave a scope open.
///
/// The name is copied (interned once per distinct name and nesting), so any string may be passed,
/// a temporary included; interned names are kept for the life of the process, so don't put an
/// unbounded set of values (an iteration counter) in scope names.
///
/// Only scopes entered while an attribution lives are part of a path: one begun before the
/// attribution was created is not seen by it, and its inner scopes' paths start below it.
///
/// While an NVTX tool is attached to the process (Nsight Systems; NVTX_INJECTION64_PATH), every
/// scope is also an NVTX range on the domain "launchwatch", so the tool's timeline shows the same
/// names; launchwatch's own injection (`launchwatch run`) turns those ranges back into scopes of
/// its report, once.
///
/// Thread safety: a scope belongs to the thread that created it and must be destroyed there.
/// Cost: with no attribution alive and no NVTX tool, one relaxed load and a branch in the
/// constructor and a branch on a member in the destructor; no allocation, no string work (NVTX is
/// not even initialised). With a tool attached, the tool's push and pop besides. While one lives, a thread-local
/// lookup of the interned name, two clock reads and an uncontended lock to record the interval.
class [[nodiscard]] scope {
 public:
  /// Enters `name` on the calling thread's scope path.
  explicit scope(std::string_view name) noexcept {
    if (detail::attributing.load(std::memory_order_relaxed)) [[unlikely]] {
      token_ = detail::enter_scope(name);
    }
  }

  /// Leaves it: the thread's path is what it was before this scope was entered.
  ~scope() {
    if (token_.serial != 0) [[unlikely]] {
      detail::leave_scope(token_);
    }
  }

  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;
  scope(scope&&) = delete;
  scope& operator=(scope&&) = delete;

 private:
  detail::scope_token token_;
};

}  // namespace launchwatch
