// The injection's C API: ranges for a language without NVTX bindings of its own.
//
// launchwatch's Python package (python/launchwatch) opens a range around each nn.Module's forward
// and backward and each optimizer step. NVTX is a header-only C library, so Python cannot call it;
// PyTorch's own NVTX bindings reach only the default domain and need a CUDA build. The package
// loads this library with ctypes instead (`launchwatch run` names it in NVTX_INJECTION64_PATH) and
// calls these functions, which push and pop ranges on the domain `launchwatch` exactly as an NVTX
// module's nvtxDomainRangePushEx and nvtxDomainRangePop would: they nest with every other NVTX
// range of the thread into one scope path. Exported from liblaunchwatch_inject.so (inject.map).
//
// Thread safety: any thread at once; each thread has its own ranges. Never throw. Cost (measured
// from Python, docs/benchmarks.md): a thread-local map lookup and what a scope costs.
#pragma once

#include <cstdint>

extern "C" {

/// The version of this API: 1. A caller checks it before using the rest.
__attribute__((visibility("default"))) int launchwatch_c_api_version();

/// Starts the injection's session, as an NVTX module's first call would (a program that makes no
/// NVTX call of its own, such as PyTorch on the CPU, still gets its report); returns the API
/// version. Defined with the entry points (entry_points.cpp).
__attribute__((visibility("default"))) int launchwatch_attach();

/// Opens a range named `name` (UTF-8, cut at 256 bytes; null is "(unnamed range)") on the calling
/// thread; returns its 0-based depth among the thread's `launchwatch` ranges, or -1 when it was
/// lost (out of memory).
__attribute__((visibility("default"))) int launchwatch_range_push(const char* name);

/// Opens a range named `name` on the calling thread as a child of `parent`, a path another thread
/// is in (launchwatch_current_path on that thread), rather than of this thread's innermost range:
/// work done on behalf of that thread, such as the backward pass PyTorch's autograd engine runs on
/// its own thread while the caller waits in backward(). Ranges this thread opens inside it nest
/// below it. Returns its depth as launchwatch_range_push does.
__attribute__((visibility("default"))) int launchwatch_range_push_under(std::uint32_t parent,
                                                                        const char* name);

/// Closes the calling thread's `launchwatch` ranges until `depth` are left (a range opened at depth
/// d is closed by launchwatch_range_pop_to(d)); does nothing when no more than `depth` are open.
/// Returns how many are left. Closing to a depth rather than one range at a time means a hook that
/// never ran (an exception inside a module's forward) cannot leave ranges open.
__attribute__((visibility("default"))) int launchwatch_range_pop_to(int depth);

/// The calling thread's innermost open range path, for launchwatch_range_push_under on another
/// thread; 0 when it has none open (or nothing is recorded). Ids are the process's.
__attribute__((visibility("default"))) std::uint32_t launchwatch_current_path();

/// Calls `hook` on the launching thread just before each kernel launch is attributed to that
/// thread's ranges, so a caller whose ranges follow what the thread is running at that moment
/// can open and close them there, once a launch, instead of at every step the thread takes: the
/// Python package reads the autograd engine's running graph node this way and opens the backward
/// ranges of the module whose forward made it (python/launchwatch/_c_sequence.c). The hook may push
/// and pop ranges with this API; it must not launch. Null removes it; one hook a process, a
/// second call replaces the first. The hook's code must stay loaded while launches may come.
/// Returns the API version. Cost: nothing at a launch while no hook is set but one relaxed load.
__attribute__((visibility("default"))) int launchwatch_set_launch_scope_hook(void (*hook)(void));

/// The program is about to start a CUPTI client of its own that registers activity buffers
/// (cuptiActivityRegisterCallbacks): CUPTI hands every kernel record to the last client that did,
/// so the CUDA bridge delivers what is pending and counts launches untimed, attributed as usual,
/// until launchwatch_cupti_records_released(). Without this call the bridge finds out by itself,
/// after a record timeout. (The PyTorch profiler needs neither: its CUPTI subscription is refused
/// while the bridge holds CUPTI's, so it traces the CPU only and leaves the records alone.)
/// Returns 1 when a bridge lives, else 0. Blocks while the devices finish their work (not during
/// a stream capture). Defined with the bridge's handover (cupti_handover.cpp).
__attribute__((visibility("default"))) int launchwatch_cupti_records_taken();

/// The program's CUPTI client is done with the records (it turned its activity kinds off and
/// flushed its buffers): the bridge registers its callbacks again and times launches again.
/// Returns 1 when it did, else 0.
__attribute__((visibility("default"))) int launchwatch_cupti_records_released();

}  // extern "C"
