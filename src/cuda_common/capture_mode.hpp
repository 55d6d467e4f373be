// What launchwatch's own CUDA calls need around a user's capture windows and busy waits.
//
// Shared by the two parts that make CUDA calls of their own beside the program's: the CUDA backend
// (its memory and timing work) and the CUDA bridge (its flushes and resolved-timing events). It
// lives in neither, so neither includes the other's headers.
#pragma once

#include <cuda_runtime_api.h>

#include <thread>

namespace launchwatch::detail::cuda {

/// Lets the calling thread make calls a capture window would otherwise forbid it (allocations,
/// synchronising another stream) while it lives. The backend's memory and timing work never goes
/// to a capturing stream, so none of it belongs in a graph, and in CUDA's default mode such a call
/// from the capturing thread would invalidate the capture instead.
class [[nodiscard]] relaxed_capture_mode {
 public:
  relaxed_capture_mode() noexcept { (void)cudaThreadExchangeStreamCaptureMode(&previous_); }
  ~relaxed_capture_mode() { (void)cudaThreadExchangeStreamCaptureMode(&previous_); }
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
};


/// One pause of a busy wait: the processor's spin hint where there is one.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace launchwatch::detail::cuda
