// Deferred timing on CUDA while the device is full: review finding 18. Each test runs in a process
// of its own (ctest), so its launch is the first timed one of the process and meets a device whose
// clock has no anchor yet. Skips where no GPU is visible.

#include <launchwatch/launchwatch.hpp>

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/conformance_kernels.hpp"
#include "cuda/cuda_backend.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using conformance::fill;

/// Spins until the host sets `*release` (mapped pinned memory), or for about 20 s at most so a
/// failing test never leaves the GPU busy.
__global__ void hold_every_sm(const volatile int* release, long long give_up_cycles) {
  const long long began = clock64();
  while (*release == 0 && clock64() - began < give_up_cycles) {
  }
}

/// A grid that occupies every SM of device 0 until released: no other kernel (an anchor's
/// included) can start while it runs.
class device_held_full {
 public:
  device_held_full() {
    EXPECT_EQ(cudaHostAlloc(&release_, sizeof(int), cudaHostAllocMapped), cudaSuccess);
    *release_ = 0;
    int* on_device = nullptr;
    EXPECT_EQ(cudaHostGetDevicePointer(&on_device, release_, 0), cudaSuccess);
    int sms = 0;
    int per_sm = 0;
    int clock_khz = 0;
    EXPECT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    EXPECT_EQ(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0), cudaSuccess);
    EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hold_every_sm, 1024, 0),
              cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    hold_every_sm<<<sms * per_sm, 1024, 0, stream_>>>(on_device, 20LL * clock_khz * 1000);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
  ~device_held_full() {
    release();
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
    (void)cudaFreeHost(release_);
  }
  device_held_full(const device_held_full&) = delete;
  device_held_full& operator=(const device_held_full&) = delete;

  void release() noexcept { *static_cast<volatile int*>(release_) = 1; }

 private:
  int* release_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Finding 18: the first timed launch of a process anchored the device clock on the launching
// thread, waiting for a kernel of its own to run, so behind a kernel that held every SM the launch
// never returned. Now the anchor is taken off the launch path and only a read waits for it.
TEST(CudaDeferredTiming, TheFirstTimedLaunchReturnsWhileAnotherKernelHoldsEverySm) {
  if (const auto why = conformance::cuda_backend::unavailable()) GTEST_SKIP() << *why;
  auto client = client::cuda();
  auto values = client.empty<int>(1);
  // Launched once untimed first, from this thread and the launching one: CUDA loads a kernel's
  // module at its first launch (lazy loading), which waits for the device whatever launches it.
  // What is tested is what timing adds.
  client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{1});
  std::async(std::launch::async, [&] {
    client.launch(fill{values.view(), 2}, cube_count{1}, cube_dim{1});
  }).get();
  client.sync();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  device_held_full held;

  auto launched = std::async(std::launch::async, [&] {
    launch_observation watching{keeps};
    client.launch(fill{values.view(), 5}, cube_count{1}, cube_dim{1});
  });
  const bool returned = launched.wait_for(5s) == std::future_status::ready;
  held.release();  // whatever happened, so the rest of the test ends
  ASSERT_TRUE(returned) << "a deferred-timed launch waited for the device to free an SM";
  launched.get();

  EXPECT_EQ(client.read(values), std::vector<int>{5});
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  const auto ticks = std::move(kept.front().profile).resolve();
  ASSERT_TRUE(ticks.has_value()) << "measured once the device was free";
  EXPECT_GT(ticks->length(), 0ns);
}

}  // namespace
}  // namespace launchwatch
