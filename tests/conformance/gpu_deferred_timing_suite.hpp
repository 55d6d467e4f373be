// Deferred timing on a GPU backend while the device is full (review finding 18), written once and
// typed over CUDA and HIP. Skips where no device is visible. The fixture's `runtime` (the backend's
// runtime class) gives the calls device_held_full makes.
#pragma once

#include <launchwatch/launchwatch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/conformance_fixture.hpp"
#include "conformance/conformance_kernels.hpp"
#include "support/capturing_sink.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch::conformance {

/// Spins until the host sets `*release` (mapped pinned memory), or for `give_up_ns` at most so a
/// failing test never leaves the GPU busy.
__global__ void hold_every_multiprocessor(const volatile int* release, std::uint64_t give_up_ns) {
  const std::uint64_t began = clock_ns();
  while (*release == 0 && clock_ns() - began < give_up_ns) {
  }
}

/// A grid that occupies every multiprocessor of device 0 until released: no other kernel (an
/// anchor's included) can start while it runs. Larger than any device holds at once, so its
/// resident cubes spin and the rest wait for them; released, every cube returns at once.
template <class R>
class device_held_full {
 public:
  device_held_full() {
    void* host = nullptr;
    EXPECT_EQ(R::host_alloc_mapped(&host, sizeof(int)), R::success);
    release_ = static_cast<int*>(host);
    *release_ = 0;
    void* on_device = nullptr;
    EXPECT_EQ(R::host_device_pointer(&on_device, host), R::success);
    EXPECT_EQ(R::stream_create(&stream_), R::success);
    const volatile int* flag = static_cast<int*>(on_device);
    std::uint64_t give_up_ns = 20'000'000'000;
    void* arguments[] = {&flag, &give_up_ns};
    const detail::launch_geometry grid{cube_count{65536}, cube_dim{1024}};
    const void* const entry = reinterpret_cast<const void*>(&hold_every_multiprocessor);
    typename R::function_handle function{};
    EXPECT_EQ(R::find_function(&function, entry), R::success);
    EXPECT_EQ(R::launch_kernel(function, entry, grid, arguments, stream_), R::success);
  }
  ~device_held_full() {
    release();
    (void)R::stream_synchronize(stream_);
    (void)R::stream_destroy(stream_);
    (void)R::free_host(release_);
  }
  device_held_full(const device_held_full&) = delete;
  device_held_full& operator=(const device_held_full&) = delete;

  void release() noexcept { *static_cast<volatile int*>(release_) = 1; }

 private:
  int* release_ = nullptr;
  typename R::stream_handle stream_ = nullptr;
};

template <class Backend>
class gpu_deferred_timing : public backend_test<Backend> {};
TYPED_TEST_SUITE_P(gpu_deferred_timing);

// Finding 18: the first timed launch of a process anchored the device clock on the launching
// thread, waiting for a kernel of its own to run, so behind a kernel that held every
// multiprocessor the launch never returned. Now the anchor is taken off the launch path and only a
// read waits for it. Each test runs in a process of its own (ctest), so its launch is the first
// timed one of the process and meets a device whose clock has no anchor yet.
TYPED_TEST_P(gpu_deferred_timing, TheFirstTimedLaunchReturnsWhileAnotherKernelHoldsEverySm) {
  using namespace std::chrono_literals;
  auto& client = this->client();
  auto values = client.template empty<int>(1);
  // Launched once untimed first, from this thread and the launching one: the runtime loads a
  // kernel's module at its first launch (lazy loading), which waits for the device whatever
  // launches it. What is tested is what timing adds.
  client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{1});
  std::async(std::launch::async, [&] {
    client.launch(fill{values.view(), 2}, cube_count{1}, cube_dim{1});
  }).get();
  client.sync();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  device_held_full<typename TypeParam::runtime> held;

  auto launched = std::async(std::launch::async, [&] {
    launch_observation watching{keeps};
    client.launch(fill{values.view(), 5}, cube_count{1}, cube_dim{1});
  });
  const bool returned = launched.wait_for(5s) == std::future_status::ready;
  held.release();  // whatever happened, so the rest of the test ends
  ASSERT_TRUE(returned) << "a deferred-timed launch waited for the device to free a multiprocessor";
  launched.get();

  EXPECT_EQ(client.read(values), std::vector<int>{5});
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  const auto ticks = std::move(kept.front().profile).resolve();
  ASSERT_TRUE(ticks.has_value()) << "measured once the device was free";
  EXPECT_GT(ticks->length(), 0ns);
}

REGISTER_TYPED_TEST_SUITE_P(gpu_deferred_timing,
                            TheFirstTimedLaunchReturnsWhileAnotherKernelHoldsEverySm);

}  // namespace launchwatch::conformance
