// The backend conformance suite's concurrency tests on the Vulkan backend (label `concurrency`).

#include "conformance/concurrency_suite.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(vulkan, backend_concurrency, vulkan_backend);
}  // namespace launchwatch::conformance
