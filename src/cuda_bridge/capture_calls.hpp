// The driver calls that begin and end a stream capture, as CUPTI's callbacks name them, and the
// stream each is about: what the bridge tells its capture_gate (capture_gate.hpp). The driver's
// domain only, as for launches: the runtime's capture calls reach it too, and so do libraries that
// bypass the runtime (XLA, Triton).
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <cstdint>

namespace launchwatch::detail::cuda_bridge {

/// The calls that begin a capture (the runtime's cudaStreamBeginCapture[ToGraph] among them).
inline constexpr CUpti_CallbackId begin_capture_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
};
/// The calls that end one.
inline constexpr CUpti_CallbackId end_capture_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
};

/// The key of the stream a capture call with CUPTI's `parameters` is about. Every one of these
/// calls' parameter structs starts with its CUstream. A per-thread default stream (the null stream
/// of a `_ptsz` call, or CU_STREAM_PER_THREAD) is the calling thread's own, so its key names the
/// thread; its capture begins and ends there.
inline std::uint64_t capture_stream_key(CUpti_CallbackId id, const void* parameters) noexcept {
  static thread_local const char this_thread = 0;
  const CUstream stream =
      parameters != nullptr ? *static_cast<const CUstream*>(parameters) : nullptr;
  const bool per_thread_call = id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz ||
                               id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz ||
                               id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz ||
                               id == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz;
  if (stream == CU_STREAM_PER_THREAD || (stream == nullptr && per_thread_call)) {
    return reinterpret_cast<std::uintptr_t>(&this_thread);
  }
  return reinterpret_cast<std::uintptr_t>(stream);
}

}  // namespace launchwatch::detail::cuda_bridge
