// The backend conformance suite's concurrency tests on the CUDA backend (labels `gpu`,
// `concurrency`).

#include "conformance/conformance_suite.hpp"
#include "cuda/cuda_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(cuda, backend_concurrency, cuda_backend);
// The other suite runs in its own binary.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(backend_conformance);
}  // namespace launchwatch::conformance
