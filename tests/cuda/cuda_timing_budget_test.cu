// Deferred timing's budget on CUDA: run with LAUNCHWATCH_CUDA_TIMING_SLOTS=512 (see
// CMakeLists.txt), one batch of slots, so a test can reach the end of it. Skips where no GPU is
// visible.

#include "conformance/gpu_timing_budget_suite.hpp"
#include "cuda/cuda_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(cuda, gpu_timing_budget, cuda_backend);
}  // namespace launchwatch::conformance
