// The launch stress (tests/runtime/launch_stress.hpp) through the CUDA bridge: 16 threads, each on
// a stream of its own, launching a foreign `<<<>>>` kernel that the bridge reports and times
// deferred (CUPTI's kernel records), while observations churn. Every launch must reach exactly one
// observer and no measurement one that did not see its launch. Skips where no GPU is visible or
// another tool holds CUPTI. LAUNCHWATCH_STRESS_LAUNCHES sets the launches per thread.

#include <launchwatch/cuda_bridge.hpp>

#include <cuda_runtime.h>

#include <iostream>

#include "runtime/launch_stress.hpp"

__global__ void stress_touch(int* counter) { atomicAdd(counter, 1); }

namespace launchwatch::stress {
namespace {

TEST(CudaBridgeStress, EveryForeignLaunchReachesExactlyOneObserverWhileObservationsChurn) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device here";
  std::unique_ptr<cuda_bridge> bridge;
  try {
    bridge = std::make_unique<cuda_bridge>();
  } catch (const cuda_bridge_unavailable& why) {
    GTEST_SKIP() << why.what();
  }
  churn_while(launches_per_thread(), [](int, std::int64_t launches) {
    cudaStream_t stream = nullptr;
    int* counter = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&counter, sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(counter, 0, sizeof(int), stream), cudaSuccess);
    for (std::int64_t i = 0; i < launches; ++i) stress_touch<<<1, 64, 0, stream>>>(counter);
    int ran = 0;
    ASSERT_EQ(cudaMemcpyAsync(&ran, counter, sizeof(int), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(ran, launches * 64) << "a reported launch did not run";
    (void)cudaFree(counter);
    (void)cudaStreamDestroy(stream);
  });
  bridge->flush();
  const auto stats = bridge->stats();
  std::cout << "bridge: " << stats.launches_reported << " launches reported, " << stats.measurements_delivered
            << " measurements delivered, " << stats.measurements_missing << " missing, " << stats.records_dropped
            << " records dropped\n";
  EXPECT_EQ(stats.launches_reported, static_cast<std::uint64_t>(launches_per_thread() * counting_keeper::threads));
}

}  // namespace
}  // namespace launchwatch::stress
