// The backend conformance suite's concurrency tests on the GPU backend's shared code over the
// host-emulated runtime (ctest label `concurrency`): the CUDA and HIP streams and timing collector
// under ThreadSanitizer, which never sees a GPU.

#include "conformance/concurrency_suite.hpp"
#include "host_gpu_backend.hpp"

namespace launchwatch::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(host_gpu, backend_concurrency, host_gpu_backend);
}  // namespace launchwatch::conformance
