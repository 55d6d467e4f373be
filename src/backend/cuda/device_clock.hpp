// Mapping a CUDA device's global timer onto the host's steady clock (gpu/device_clock.hpp over the
// CUDA runtime; the probe kernel is in device_clock.cu).
#pragma once

#include "backend/gpu/device_clock.hpp"
#include "cuda_runtime.hpp"

namespace launchwatch::detail::cuda {

using gpu::clock_anchor;
using gpu::clock_segment;
/// A CUDA device's `%globaltimer`, anchored to the host's steady clock by a probe kernel.
using device_clock = gpu::device_clock<cuda_runtime>;

}  // namespace launchwatch::detail::cuda
