// The backend conformance suite's concurrency tests on the CPU backend (ctest label `concurrency`).

#include "conformance/concurrency_suite.hpp"
#include "conformance/cpu_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(cpu, backend_concurrency, cpu_backend);
}  // namespace launchwatch::conformance
