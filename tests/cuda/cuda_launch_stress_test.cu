// The launch stress (tests/runtime/launch_stress.hpp) on the CUDA backend: 16 threads, each on a
// stream of its own, launching deferred-timed kernels on the GPU while observations churn. Skips
// where no GPU is visible. LAUNCHWATCH_STRESS_LAUNCHES sets the launches per thread.

#include "cuda/cuda_backend.hpp"
#include "runtime/launch_stress.hpp"

namespace launchwatch::stress {
namespace {

TEST(CudaLaunchStress, EveryLaunchReachesExactlyOneObserverWhileObservationsChurn) {
  if (const auto why = conformance::cuda_backend::unavailable()) GTEST_SKIP() << *why;
  churn_while_launching(client::cuda(), launches_per_thread());
}

}  // namespace
}  // namespace launchwatch::stress
