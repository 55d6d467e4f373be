// Making the CUDA bridge from inside cuInit, as CUDA's injection entry point does (`launchwatch
// run`): there the CUDA runtime may be half initialised on this very thread, holding its lock, so
// any runtime call waits forever. Subscribing to CUPTI there is what CUPTI's own injection samples
// do, and the only way to see the program's first launches.
#pragma once

namespace launchwatch::detail::cuda_bridge {

/// True on a thread while an inside_cuda_init guard lives on it.
[[nodiscard]] bool constructing_inside_cuda_init() noexcept;

/// Marks this thread as inside cuInit while it lives: a cuda_bridge made meanwhile calls no CUDA
/// runtime function (it skips counting devices, which cuInit being called already shows, and
/// reads the driver's version and cuStreamIsCapturing from the loaded driver itself).
/// Thread safety: per thread. Not copyable or movable.
class [[nodiscard]] inside_cuda_init {
 public:
  inside_cuda_init() noexcept;
  ~inside_cuda_init();
  inside_cuda_init(const inside_cuda_init&) = delete;
  inside_cuda_init& operator=(const inside_cuda_init&) = delete;
  inside_cuda_init(inside_cuda_init&&) = delete;
  inside_cuda_init& operator=(inside_cuda_init&&) = delete;

 private:
  bool was_;
};

/// Calls `then` once, on the thread that next creates a CUDA context while a bridge lives (by then
/// the CUDA runtime has finished initialising; never in a build without the bridge). For work that
/// must come after the runtime's own initialisation, such as an exit handler that has to run before
/// the runtime's (exit runs them in reverse order of registration). Why not a thread that asks the
/// runtime and waits: a program that exits right after cuInit would have that thread call into the
/// runtime while exit tears it down. Returns false when another `then` is already waiting.
/// Thread safety: any thread.
bool after_cuda_runtime_initialised(void (*then)()) noexcept;

/// Runs what after_cuda_runtime_initialised was given, if anything, once (the bridge's callback for
/// a context created).
void cuda_context_created() noexcept;

}  // namespace launchwatch::detail::cuda_bridge
