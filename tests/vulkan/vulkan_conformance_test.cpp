// The backend conformance suite on the Vulkan backend, unchanged: lavapipe on the CPU in CI, the
// GPU's driver where there is one. Every kernel's result is checked as on the CPU backend.

#include "conformance/conformance_suite.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace launchwatch::conformance {
LAUNCHWATCH_INSTANTIATE_CONFORMANCE_SUITES(vulkan, vulkan_backend);
}  // namespace launchwatch::conformance
