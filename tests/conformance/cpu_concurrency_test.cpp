// The backend conformance suite's concurrency tests on the CPU backend (ctest label `concurrency`).

#include "conformance/conformance_suite.hpp"
#include "conformance/cpu_backend.hpp"

namespace launchwatch::conformance {
// The other suite runs in its own binary (labelled apart).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(backend_conformance);
INSTANTIATE_TYPED_TEST_SUITE_P(cpu, backend_concurrency, cpu_backend);
}  // namespace launchwatch::conformance
