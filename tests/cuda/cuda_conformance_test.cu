// The backend conformance suite on the CUDA backend, unchanged. Compiled by nvcc, so every kernel
// of the suite runs on the GPU; skips, saying why, where no device is visible.

#include "conformance/conformance_suite.hpp"
#include "conformance/launch_path_conformance.hpp"
#include "cuda/cuda_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(cuda, backend_conformance, cuda_backend);
INSTANTIATE_TYPED_TEST_SUITE_P(cuda, launch_path_conformance, cuda_backend);
// The other suite runs in its own binary.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(backend_concurrency);
}  // namespace launchwatch::conformance
