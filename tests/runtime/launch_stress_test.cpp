// The launch stress (launch_stress.hpp) on the CPU backend.
//
// LAUNCHWATCH_STRESS_LAUNCHES sets the launches per thread (default 20,000; 2,000 under
// ThreadSanitizer). `LAUNCHWATCH_STRESS_LAUNCHES=1000000 launchwatch_launch_stress_test` is the
// 16 x 1M run of docs/benchmarks.md.

#include "runtime/launch_stress.hpp"

namespace launchwatch::stress {
namespace {

TEST(LaunchStress, EveryLaunchReachesExactlyOneObserverWhileObservationsChurn) {
  churn_while_launching(client::cpu(), launches_per_thread());
}

}  // namespace
}  // namespace launchwatch::stress
