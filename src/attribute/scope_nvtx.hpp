// Scopes as NVTX ranges: while an NVTX tool (Nsight Systems, launchwatch's injection) is attached
// to the process, every scope is also a range on the NVTX domain "launchwatch", so the tool's
// timeline shows what launchwatch's reports show.
#pragma once

#include <string_view>

namespace launchwatch::detail {

/// Whether scopes go to NVTX in this process: decided once, at the first call (made during static
/// initialisation), and constant after it.
///
/// True when NVTX_INJECTION64_PATH names a tool other than the module this code is linked into (a
/// tool never traces itself: launchwatch's injection library links this code too) or a tool was
/// linked in statically (InitializeInjectionNvtx2_fnptr), and that tool accepted the domain. False
/// in a build without NVTX. With no tool configured NVTX is never initialised, so scopes stay at
/// their idle cost (one relaxed load and a branch). Cost after the first call: a guard load.
bool scopes_go_to_nvtx() noexcept;

/// Pushes `name` as a range on the launchwatch domain; false if it could not (out of memory).
/// Precondition: scopes_go_to_nvtx(). Cost: a thread-local cache probe for the name's registered
/// string (one registration per name and thread), then the tool's push.
bool push_nvtx_range(std::string_view name) noexcept;

/// Pops the calling thread's innermost range on the launchwatch domain.
void pop_nvtx_range() noexcept;

/// Whether the calling thread is inside push_nvtx_range or pop_nvtx_range: the NVTX tool is then
/// hearing a scope of this same copy of launchwatch, which records it already. launchwatch's
/// injection asks, so a scope is never entered twice when the program and the injection share one
/// copy of the library; a separate copy (the usual case) has its own flag, never set here.
bool in_scope_nvtx_call() noexcept;

}  // namespace launchwatch::detail
