// NVTX ranges as launchwatch scopes: the NVTX side of launchwatch's injection library.
//
// NVTX hands a tool its function table through InitializeInjectionNvtx2(getExportTable), once per
// module of the program that uses NVTX (an executable and each shared library, PyTorch's included).
// Filling the push and pop slots makes each range a scope on the calling thread, so the report's
// paths are the program's own NVTX nesting.
#pragma once

#include <cstdint>
#include <string_view>

#include <nvtx3/nvToolsExt.h>

namespace launchwatch::detail {

/// Fills the NVTX function table behind `get_export_table` with launchwatch's range handlers;
/// returns 1 (NVTX's "attached") or 0 when the table is not one this code understands.
///
/// Filled: core RangePushA/W/Ex and RangePop; core2 DomainRangePushEx and DomainRangePop,
/// DomainCreateA/W, DomainRegisterStringA/W, DomainDestroy, Initialize. Other slots are left, and
/// NVTX makes them no-ops: markers, start/end ranges (which may end on another thread, so are no
/// scope), naming threads and categories. Safe to call any number of times (once per module).
///
/// Ranges: each thread keeps one stack per domain; a push enters a scope (detail::enter_scope, so
/// it is on the thread's path only while an attribution records), a pop leaves the domain's
/// innermost one and nothing of another domain: ranges of other domains opened inside it go on,
/// below what remains of the path (`a/b` goes on as `b`; review 2026-12-01b, finding 11). A push
/// returns the range's 0-based depth in its domain, a pop the depth of the
/// range it ended, or -1 when the domain had none open. A range pushed by a launchwatch scope of
/// this same copy of the library is not entered again (in_scope_nvtx_call); one from another copy
/// (a program linking launchwatch itself) is, so its scopes reach this injection's report once.
/// Names follow range_names.hpp. Thread safety: the handlers run on any thread at once.
int fill_nvtx_export_table(NvtxGetExportTableFunc_t get_export_table) noexcept;

/// The calling thread's ranges in `domain` as the handlers above keep them, for the injection's C
/// API (c_api.hpp), which opens ranges for Python without going through an NVTX module.
///
/// push_domain_range is a push as above. push_domain_range_under pushes `name` as a child of
/// `parent`, a path another thread is in (enter_scope_under): the autograd thread's module ranges
/// below the `backward` range of the thread that called backward(). pop_domain_ranges_to pops the
/// domain's ranges until `depth` are left (none when fewer are open; a negative depth is 0), so an
/// exception that skipped some pops cannot leave ranges open, and returns how many are left;
/// other domains' ranges inside them go on, as a pop leaves them.
/// Never throw; thread safety as the handlers.
int push_domain_range(nvtxDomainHandle_t domain, std::string_view name) noexcept;
int push_domain_range_under(nvtxDomainHandle_t domain, std::uint32_t parent,
                            std::string_view name) noexcept;
int pop_domain_ranges_to(nvtxDomainHandle_t domain, int depth) noexcept;

}  // namespace launchwatch::detail
