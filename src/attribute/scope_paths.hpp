// Interned scope paths and each thread's stack of open scopes: what `scope` pushes and an
// attribution reads at each launch.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstddef>
#include <optional>
#include <string_view>

#include <launchwatch/attribute/scope.hpp>

namespace launchwatch::detail {

/// Set while at least one attribution lives: scopes entered then are pushed onto their thread's
/// path. Unlike `attributing` (which an attached NVTX tool also sets), nothing else sets it.
extern std::atomic<bool> recording_scopes;

/// A scope path, interned: the same name entered under the same parent always gets the same id,
/// on every thread, for the life of the process. 0 is the empty path (outside any scope).
using path_id = std::uint32_t;
inline constexpr path_id no_path = 0;

/// The id of `name` entered under `parent`, interning it on first sight.
///
/// Cost: a thread-local cache probe (a mix of the name's length and first and last eight bytes) and
/// a string compare when this thread has recently seen the pair (a few hundred pairs fit);
/// otherwise a hash of the name under a process-wide lock, and a copy of the name the first time
/// anyone sees it.
/// May throw std::bad_alloc.
path_id intern_path(path_id parent, std::string_view name);

/// How many of this thread's intern_path calls its cache could not answer (went to the table), so
/// a test can tell what the cache holds.
std::size_t intern_cache_misses() noexcept;

/// One interned path's last name and the path it was entered under.
struct path_node {
  path_id parent;
  std::string_view name;  // over interned storage that lives as long as the process
};

/// The node of one path (takes the interning lock).
path_node read_path(path_id id);

/// The calling thread's innermost open scope path, or no_path. Cost: a thread-local read.
path_id current_path() noexcept;

/// A function that opens and closes the calling thread's scopes for what the thread is running
/// at the moment it launches, rather than at every step it takes: PyTorch's autograd engine runs
/// hundreds of graph nodes a backward pass, and the module whose forward made the running node is
/// read off it only when the node launches a kernel (python/launchwatch/_c_sequence.c). It runs on
/// the launching thread, before an attribution reads that thread's path, with no lock of the
/// attribution's held; it may enter and leave scopes, and must not launch.
using launch_scope_hook = void (*)();

/// The hook in use (nullptr: none). One a process; set_launch_scope_hook replaces it.
extern std::atomic<launch_scope_hook> installed_launch_scope_hook;

/// Installs `hook` (nullptr removes it). Thread safety: any thread; a launch racing the change
/// calls the old hook or the new one. A hook's code must outlive the process's launches (the
/// Python extension that installs one is never unloaded).
void set_launch_scope_hook(launch_scope_hook hook) noexcept;

/// Calls the installed hook, where there is one. Cost: one relaxed load and a branch when none
/// is installed.
inline void refresh_launch_scopes() noexcept {
  if (const launch_scope_hook hook = installed_launch_scope_hook.load(std::memory_order_relaxed))
    hook();
}

/// Enters `name` on the calling thread's scope stack as a child of `parent`, a path another
/// thread read with current_path() (no_path: at the root), rather than of this thread's innermost
/// scope; scopes this thread enters inside it nest below it, and leave_scope(token) leaves it as
/// it leaves any scope. For work one thread does on behalf of another: PyTorch's autograd engine
/// runs the backward pass on a thread of its own while the thread that called backward() waits in
/// its `backward` scope, and the backward ranges of the modules belong under that scope.
///
/// Never throws (a scope that cannot be recorded is not entered, as enter_scope). Thread safety:
/// path ids are the process's, so `parent` may come from any thread. Cost: enter_scope's.
scope_token enter_scope_under(path_id parent, std::string_view name) noexcept;

/// How many live attributions charge unscoped launches to the sole scoped thread. Only while one
/// does are threads listed as they enter their first scope and leave their last (a process-wide
/// lock each time), so other attributions' scopes cost what they did. A thread already in scopes
/// when the first such attribution starts is listed from its next first scope on.
extern std::atomic<int> sole_scoped_wanted;

/// The innermost open scope path of the one listed thread that has a scope open, or no_path when
/// none or several have (unscoped_launches::sole_scoped_thread). Cost: a relaxed load when no thread
/// or several have; a process-wide lock when exactly one has.
path_id sole_scoped_thread_path() noexcept;

/// How many scopes the calling thread has open (that were entered while attributing).
std::size_t open_scope_depth() noexcept;

/// Where an open scope sits on its thread's stack.
struct open_scope {
  /// Its place on the stack: 0 is the outermost.
  std::size_t depth = 0;
  /// Its path.
  path_id path = no_path;
};

/// The scope `token` names, while it is open on the calling thread; nothing once it was left (by
/// itself or with an enclosing scope), or when it never was on a path (entered while no
/// attribution recorded). For a source of scopes that keeps stacks of its own (NVTX domains) and
/// must know what leave_scope would end with a scope. Cost: a thread-local read.
std::optional<open_scope> find_open_scope(scope_token token) noexcept;

}  // namespace launchwatch::detail
