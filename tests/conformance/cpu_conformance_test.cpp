// The backend conformance suite on the CPU backend.

#include "conformance/conformance_suite.hpp"
#include "conformance/launch_path_conformance.hpp"
#include "conformance/cpu_backend.hpp"

namespace launchwatch::conformance {
// The other suite runs in its own binary (labelled apart).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(backend_concurrency);
INSTANTIATE_TYPED_TEST_SUITE_P(cpu, backend_conformance, cpu_backend);
INSTANTIATE_TYPED_TEST_SUITE_P(cpu, launch_path_conformance, cpu_backend);
}  // namespace launchwatch::conformance
