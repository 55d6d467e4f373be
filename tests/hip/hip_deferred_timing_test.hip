// Deferred timing on HIP while the device is full: review finding 18 (conformance/gpu_deferred_timing_suite.hpp). Each
// test runs in a process of its own (ctest). Skips where no GPU is visible.

#include "conformance/gpu_deferred_timing_suite.hpp"
#include "hip/hip_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(hip, gpu_deferred_timing, hip_backend);
}  // namespace launchwatch::conformance
