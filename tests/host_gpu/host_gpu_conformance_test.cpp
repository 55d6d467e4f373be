// The backend conformance suite, unchanged, on the GPU backend's shared code over the host-emulated
// runtime: what the CUDA and HIP backends do around the API's calls, in every build.

#include "conformance/conformance_suite.hpp"
#include "host_gpu_backend.hpp"

namespace launchwatch::conformance {
LAUNCHWATCH_INSTANTIATE_CONFORMANCE_SUITES(host_gpu, host_gpu_backend);
}  // namespace launchwatch::conformance
