// Deferred timing's budget on HIP: run with LAUNCHWATCH_HIP_TIMING_SLOTS=64 (see CMakeLists.txt),
// one batch of slots, so a test can reach the end of it. Skips where no GPU is visible.

#include "conformance/gpu_timing_budget_suite.hpp"
#include "hip/hip_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(hip, gpu_timing_budget, hip_backend);
}  // namespace launchwatch::conformance
