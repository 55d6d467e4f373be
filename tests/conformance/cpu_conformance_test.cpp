// The backend conformance suite on the CPU backend.

#include "conformance/conformance_suite.hpp"
#include "conformance/cpu_backend.hpp"

namespace launchwatch::conformance {
LAUNCHWATCH_INSTANTIATE_CONFORMANCE_SUITES(cpu, cpu_backend);
}  // namespace launchwatch::conformance
