// Core's interface: the name a thread of launchwatch's own shows in the tools that watch the
// process (perf, nsys, gdb, top -H, /proc/PID/task/TID/comm).
//
// Why: a thread takes its starter's name, so launchwatch's collector, fold and writer threads
// appeared as `python3` or `pt_autograd_0` beside the program's own, and a profile of a watched
// program could not tell launchwatch's work from the program's (the H200 profiles of
// docs/benchmarks.md put the fold under autograd's name). Each thread launchwatch starts names
// itself `lw-...`.
#pragma once

namespace launchwatch::detail {

/// Names the calling thread `name` (at most 15 characters, as Linux keeps; longer is cut), where
/// the platform has thread names; elsewhere nothing. Never fails: a name is a courtesy.
/// Thread safety: names only the calling thread. Cost: a system call; call once, where a thread
/// starts.
void name_this_thread(const char* name) noexcept;

}  // namespace launchwatch::detail
