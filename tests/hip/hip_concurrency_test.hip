// The backend conformance suite's concurrency tests on the HIP backend (labels `gpu`,
// `concurrency`).

#include "conformance/concurrency_suite.hpp"
#include "hip/hip_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(hip, backend_concurrency, hip_backend);
}  // namespace launchwatch::conformance
