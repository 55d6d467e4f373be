// The backend conformance suite on the CUDA backend, unchanged. Compiled by nvcc, so every kernel
// of the suite runs on the GPU; skips, saying why, where no device is visible.

#include "conformance/conformance_suite.hpp"
#include "cuda/cuda_backend.hpp"

namespace launchwatch::conformance {
LAUNCHWATCH_INSTANTIATE_CONFORMANCE_SUITES(cuda, cuda_backend);
}  // namespace launchwatch::conformance
