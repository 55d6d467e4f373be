// The backend conformance suite's concurrency tests on the CUDA backend (labels `gpu`,
// `concurrency`).

#include "conformance/concurrency_suite.hpp"
#include "cuda/cuda_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(cuda, backend_concurrency, cuda_backend);
}  // namespace launchwatch::conformance
