// The backend conformance suite on the HIP backend, unchanged. Compiled by HIP's clang (or by nvcc
// on HIP's NVIDIA platform), so every kernel of the suite runs on the GPU; skips, saying why, where
// no device is visible.

#include "conformance/conformance_suite.hpp"
#include "hip/hip_backend.hpp"

namespace launchwatch::conformance {
LAUNCHWATCH_INSTANTIATE_CONFORMANCE_SUITES(hip, hip_backend);
}  // namespace launchwatch::conformance
