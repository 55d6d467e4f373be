// Deferred timing's storage for one CUDA device (gpu/timing_slots.hpp over the CUDA runtime):
// slots stamped with %globaltimer by the launch's own kernel, read back in bulk.
#pragma once

#include <cstdint>
#include <string_view>

#include "backend/gpu/timing_slots.hpp"
#include "cuda_runtime.hpp"
#include "device_health.hpp"

namespace launchwatch::detail::cuda {

using gpu::device_window;
using timing_record = gpu::timing_record<cuda_runtime>;
using timing_batch = gpu::timing_batch<cuda_runtime>;
using timing_collector = gpu::timing_collector<cuda_runtime>;

/// LAUNCHWATCH_CUDA_TIMING_SLOTS=`value` (gpu::parse_timing_slots).
inline std::uint32_t parse_timing_slots(std::string_view value) {
  return gpu::parse_timing_slots(cuda_runtime::timing_slots_variable, value);
}

/// LAUNCHWATCH_CUDA_TIMING_SLOTS's value when set, else the default (gpu::parse_timing_slots).
inline std::uint32_t timing_slots_from_environment() {
  return gpu::timing_slots_from_environment(cuda_runtime::timing_slots_variable);
}

}  // namespace launchwatch::detail::cuda
