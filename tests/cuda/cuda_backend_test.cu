// What the CUDA backend does beyond the conformance suite: device-clock timing, sticky faults,
// capture windows beside other threads' work, attribute checks, and launches from host-only files.
// Every test needs a GPU (ctest label `gpu`) and skips, saying why, where none is visible.

#include <cuda_runtime_api.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/dry_run.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/runtime/client.hpp>

#include "backend/cuda/entry_launch.hpp"
#include "backend/cuda/grid_overhead.hpp"
#include "conformance/conformance_kernels.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/host_only_launch.hpp"
#include "support/capturing_sink.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch::cuda_testing {

using namespace std::chrono_literals;
using conformance::fail_at;
using conformance::fill;
using conformance::spin;

/// Writes through a pointer that no allocation holds: an illegal address on the device.
struct writes_through_a_stray_pointer {
  int* stray;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    if (u.absolute_pos() == 0) *stray = 1;
  }
};

/// Keeps 128 floats live across its loops: nvcc gives it so many registers that it cannot run 1024
/// units per cube.
struct register_hog {
  device_span<float> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    constexpr int n = 128;
    float acc[n];
#pragma unroll
    for (int i = 0; i < n; ++i) {
      acc[i] = out[(u.unit_index() * 131u + static_cast<unsigned>(i) * 977u) % out.size()];
    }
#pragma unroll
    for (int r = 1; r < 5; ++r) {
#pragma unroll
      for (int i = 0; i < n; ++i) acc[i] = acc[i] * acc[(i + r) % n] + acc[(i + 3 * r) % n];
    }
    float sum = 0;
#pragma unroll
    for (int i = 0; i < n; ++i) sum += acc[i] * static_cast<float>(i + 1);
    out[u.absolute_pos() % out.size()] = sum;
  }
};

/// One of many distinct kernels: each instantiation gets a CUDA entry of its own.
template <int Tag>
struct tagged_fill {
  device_span<int> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < out.size()) out[i] = Tag;
  }
};

/// Launches tagged_fill<Tag> for each tag, in order, over one cube of `units`.
template <int... Tags>
void launch_each_tagged(const launchwatch::client& on, buffer<int>& out, std::uint32_t units,
                        std::integer_sequence<int, Tags...>) {
  (on.launch(tagged_fill<Tags>{out.view()}, cube_count{1}, cube_dim{units}), ...);
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = conformance::cuda_backend::unavailable()) GTEST_SKIP() << *why;
    client_.emplace(client::cuda());
  }
  launchwatch::client& client() { return *client_; }

 private:
  std::optional<launchwatch::client> client_;
};

using CudaDevice = CudaTest;
using CudaTiming = CudaTest;
using CudaFaults = CudaTest;
using CudaCapture = CudaTest;
using CudaValidation = CudaTest;
using CudaMemory = CudaTest;
using CudaLaunch = CudaTest;

std::vector<profile_ticks> resolve_all(std::vector<testing::kept_profile> kept) {
  std::vector<profile_ticks> out;
  for (auto& [name, profile] : kept) {
    auto ticks = std::move(profile).resolve();
    EXPECT_TRUE(ticks.has_value()) << name;
    if (ticks) out.push_back(*ticks);
  }
  return out;
}

// ---- the device -----------------------------------------------------------------------------

TEST_F(CudaDevice, AnIndexPastTheLastDeviceIsUnavailableAndSaysHowManyThereAre) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  try {
    (void)client::cuda(count);
    FAIL() << "device " << count << " of " << count << " was handed out";
  } catch (const backend_unavailable& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("has " + std::to_string(count) + " CUDA device"));
  }
}

TEST_F(CudaDevice, TheSameIndexIsTheSameDevice) {
  EXPECT_TRUE(client::cuda(0) == client());
  EXPECT_EQ(client().backend(), "cuda");
  EXPECT_FALSE(client().device_name().empty());
}

TEST_F(CudaDevice, ALaunchLeavesTheThreadOnTheDeviceTheProgramMadeCurrent) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) {
    GTEST_SKIP() << "needs two CUDA devices: with one, every thread's current device is the "
                    "client's, and a launch asks CUDA nothing about it";
  }
  auto out = client().empty<int>(8);
  int current = -1;
  std::thread{[&] {
    if (cudaSetDevice(1) != cudaSuccess) return;
    client().launch(fill{out.view(), 3}, cube_count{1}, cube_dim{8});
    (void)cudaGetDevice(&current);
  }}.join();
  EXPECT_EQ(current, 1);
  EXPECT_EQ(client().read(out), std::vector<int>(8, 3));
}

// ---- the launch call ------------------------------------------------------------------------

/// One launch_entry call and the runtime's last error right after it.
struct entry_launched {
  detail::cuda::entry_launch_result result;
  cudaError_t last_error = cudaSuccess;
};

/// Launches tagged_fill<Tag> over `out` through launch_entry with `function`, on a stream of its
/// own that it waits for.
template <int Tag>
entry_launched launch_tagged_entry(cudaFunction_t function, buffer<int>& out,
                                   dim3 block = dim3{8}) {
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  tagged_fill<Tag> kernel{out.view()};
  detail::cuda_timing_target untimed{};
  void* arguments[] = {&kernel, &untimed};
  entry_launched launched;
  launched.result = detail::cuda::launch_entry(
      function, reinterpret_cast<const void*>(&detail::cuda_entry<tagged_fill<Tag>>), dim3{1},
      block, arguments, stream);
  launched.last_error = cudaGetLastError();
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  return launched;
}

/// tagged_fill<Tag>'s function in the current device's context.
template <int Tag>
cudaFunction_t function_of_tagged() {
  cudaFunction_t function = nullptr;
  EXPECT_EQ(cudaGetFuncBySymbol(
                &function, reinterpret_cast<const void*>(&detail::cuda_entry<tagged_fill<Tag>>)),
            cudaSuccess);
  return function;
}

TEST_F(CudaLaunch, AnEntrysFunctionLaunchesThroughTheDriver) {
  auto out = client().empty<int>(8);
  const auto launched = launch_tagged_entry<9001>(function_of_tagged<9001>(), out);
  EXPECT_EQ(launched.result.status, cudaSuccess);
  EXPECT_TRUE(launched.result.through_driver);
  EXPECT_EQ(client().read(out), std::vector<int>(8, 9001));
}

TEST_F(CudaLaunch, WithoutAFunctionTheRuntimeLaunchesTheEntry) {
  auto out = client().empty<int>(8);
  const auto launched = launch_tagged_entry<9003>(nullptr, out);
  EXPECT_EQ(launched.result.status, cudaSuccess);
  EXPECT_FALSE(launched.result.through_driver);
  EXPECT_EQ(client().read(out), std::vector<int>(8, 9003));
}

TEST_F(CudaLaunch, ALaunchTheDriverRefusesIsTheRuntimesOwnFailure) {
  // Over the device's limit of units per cube: the driver refuses it, and the runtime's call,
  // made alone, says what the runtime says, and sets the runtime's last error as it would.
  auto out = client().empty<int>(8);
  const dim3 too_large{4096};
  const auto alone = launch_tagged_entry<9004>(nullptr, out, too_large);
  const auto launched = launch_tagged_entry<9004>(function_of_tagged<9004>(), out, too_large);
  ASSERT_NE(alone.result.status, cudaSuccess);
  EXPECT_EQ(launched.result.status, alone.result.status);
  EXPECT_FALSE(launched.result.through_driver);
  EXPECT_EQ(launched.last_error, alone.last_error);
}

TEST_F(CudaLaunch, AThreadThatHasNeverCalledCudaLaunchesOnAPinnedClientsStream) {
  // A pinned client's stream is made on this thread; the other thread's first CUDA call is the
  // launch, so no context is current there until the runtime makes one (the driver's call alone
  // would refuse it).
  const launchwatch::client pinned = client().pinned();
  auto out = pinned.empty<int>(8);
  std::thread{[&] {
    pinned.launch(tagged_fill<9002>{out.view()}, cube_count{1}, cube_dim{8});
  }}.join();
  EXPECT_EQ(pinned.read(out), std::vector<int>(8, 9002));
}

// ---- timing ---------------------------------------------------------------------------------

TEST_F(CudaTiming, DeferredWindowsOfBackToBackKernelsAreAsLongAsTheKernelsAndInIssueOrder) {
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client().empty<int>(1);
  {
    launch_observation watching{keeps};
    for (int i = 0; i < 20; ++i) {
      client().launch(spin{50'000ull, done.view()}, cube_count{4}, cube_dim{64});
    }
  }
  const auto windows = resolve_all(keeps->take_profiles());
  ASSERT_EQ(windows.size(), 20u);
  for (std::size_t i = 0; i < windows.size(); ++i) {
    // Each unit spun 50 µs by the same clock the entry stamps with; the window holds them all.
    EXPECT_GE(windows[i].length(), 50us) << "launch " << i;
    EXPECT_LT(windows[i].length(), 5ms) << "launch " << i;
    if (i > 0) EXPECT_GE(windows[i].start(), windows[i - 1].end()) << "launch " << i;
  }
}

TEST_F(CudaTiming, AMappedWindowLiesBetweenTheHostInstantsAroundTheLaunch) {
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client().empty<int>(1);
  client().launch(fill{done.view(), 0}, cube_count{1}, cube_dim{1});  // warm the module
  client().sync();
  // Anchoring takes a few µs of uncertainty either way; the window must not leave the bracket by
  // more than that.
  constexpr auto slack = 20us;
  for (int i = 0; i < 20; ++i) {
    const auto before = std::chrono::steady_clock::now();
    {
      launch_observation watching{keeps};
      client().launch(spin{200'000ull, done.view()}, cube_count{1}, cube_dim{32});
    }
    auto kept = keeps->take_profiles();
    ASSERT_EQ(kept.size(), 1u);
    const auto ticks = std::move(kept[0].profile).resolve();
    const auto after = std::chrono::steady_clock::now();
    ASSERT_TRUE(ticks.has_value());
    EXPECT_GE(ticks->start(), before - slack) << "the kernel started before it was launched";
    EXPECT_LE(ticks->end(), after + slack) << "the kernel ended after its end was read";
    EXPECT_GE(ticks->length(), 200us);
  }
}

TEST_F(CudaTiming, ThousandsOfMeasurementsKeptUnreadAllResolveInOrder) {
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client().empty<int>(1);
  constexpr int launches = 3000;  // more than one chunk of timing slots in flight at once
  {
    launch_observation watching{keeps};
    for (int i = 0; i < launches; ++i) {
      client().launch(fill{done.view(), i}, cube_count{1}, cube_dim{32});
    }
  }
  const auto windows = resolve_all(keeps->take_profiles());
  ASSERT_EQ(windows.size(), static_cast<std::size_t>(launches));
  for (std::size_t i = 1; i < windows.size(); ++i) {
    ASSERT_GE(windows[i].start(), windows[i - 1].end()) << "launch " << i;
  }
  EXPECT_EQ(client().read(done), std::vector<int>{launches - 1});
}

TEST_F(CudaTiming, MeasurementsDroppedUnreadDoNotStopLaterOnesFromBeingTaken) {
  // The default `profiled` drops each measurement unread: its slot must come back once the kernel
  // has written it, and the launches after it be measured as usual.
  class drops : public launch_observer {
   public:
    void launched(std::string_view) override {}
    timing_request timing() const override { return timing_request::deferred; }
  };
  auto done = client().empty<int>(1);
  {
    launch_observation watching{std::make_shared<drops>()};
    for (int i = 0; i < 5000; ++i) client().launch(fill{done.view(), i}, cube_count{1}, cube_dim{1});
  }
  client().sync();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  {
    launch_observation watching{keeps};
    client().launch(spin{100'000ull, done.view()}, cube_count{1}, cube_dim{1});
  }
  const auto windows = resolve_all(keeps->take_profiles());
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_GE(windows[0].length(), 100us);
}

// Issue 10: timing state on the device is bounded; a pass far longer than it still gets every
// measurement, since each batch of slots is read back and reused once its launches have run.
TEST_F(CudaTiming, APassOfManyMoreTimedLaunchesThanSlotsGetsEveryMeasurement) {
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client().empty<int>(1);
  constexpr int launches = 20'000;  // ten times the slots a device ever has
  {
    launch_observation watching{keeps};
    for (int i = 0; i < launches; ++i) client().launch(fill{done.view(), i}, cube_count{1}, cube_dim{32});
  }
  client().sync();
  const auto windows = resolve_all(keeps->take_profiles());
  EXPECT_EQ(windows.size(), static_cast<std::size_t>(launches));
}

// Issue 10: a window spans the kernel plus the grid's launch and retire no in-kernel stamp sees.
TEST_F(CudaTiming, AWindowHoldsTheKernelAndTheDevicesGridOverhead) {
  cudaDeviceProp properties{};
  ASSERT_EQ(cudaGetDeviceProperties(&properties, 0), cudaSuccess);
  const auto measured = detail::cuda::measured_grid_overheads();
  if (std::none_of(measured.begin(), measured.end(), [&](const auto& m) {
        return m.major == properties.major && m.minor == properties.minor;
      })) {
    GTEST_SKIP() << "no grid overhead measured for compute capability " << properties.major << "."
                 << properties.minor;
  }
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto done = client().empty<int>(1);
  {
    launch_observation watching{keeps};
    client().launch(spin{100'000ull, done.view()}, cube_count{1}, cube_dim{32});
  }
  const auto windows = resolve_all(keeps->take_profiles());
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_GE(windows[0].length(), 100us + 400ns) << "the grid overhead was not added";
  EXPECT_LT(windows[0].length(), 150us);
}

TEST_F(CudaTiming, AMeasurementOutlivesTheClientThatTookIt) {
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  {
    auto c = client::cuda();
    auto done = c.empty<int>(1);
    launch_observation watching{keeps};
    c.launch(spin{100'000ull, done.view()}, cube_count{1}, cube_dim{1});
  }
  const auto windows = resolve_all(keeps->take_profiles());
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_GE(windows[0].length(), 100us);
}

// ---- faults ---------------------------------------------------------------------------------

TEST_F(CudaFaults, AnIllegalAddressNamesTheKernelCudasErrorAndThatTheFaultIsSticky) {
  client().launch(writes_through_a_stray_pointer{reinterpret_cast<int*>(0x10)}, cube_count{1},
                  cube_dim{1});
  try {
    client().sync();
    FAIL() << "an illegal address went unreported";
  } catch (const kernel_failure& failure) {
    EXPECT_EQ(failure.kernel(), type_name<writes_through_a_stray_pointer>());
    EXPECT_THAT(failure.what(), ::testing::HasSubstr("cudaErrorIllegalAddress"));
    EXPECT_THAT(failure.what(), ::testing::HasSubstr("sticky"));
  }
}

// Review finding 5: CUDA reports a fault per context, so with several launches pending the culprit
// is not known, and naming the first of them would accuse a kernel that may have run fine.
TEST_F(CudaFaults, AStickyFaultWithSeveralLaunchesPendingNamesNoKernelButListsThem) {
  auto values = client().empty<int>(8);
  client().launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
  client().launch(fail_at{values.view(), 0}, cube_count{1}, cube_dim{8});
  client().launch(fill{values.view(), 2}, cube_count{1}, cube_dim{8});
  try {
    client().sync();
    FAIL() << "the fault went unreported";
  } catch (const kernel_failure& failure) {
    EXPECT_TRUE(failure.kernel().empty()) << "named '" << failure.kernel() << "' as the culprit";
    EXPECT_THAT(failure.what(), ::testing::HasSubstr("does not say which"));
    EXPECT_THAT(failure.what(), ::testing::HasSubstr("fail_at"));
  }
}

TEST_F(CudaFaults, AfterAStickyFaultEveryLaterOperationFailsAndNoneSucceeds) {
  auto values = client().empty<int>(8);
  client().launch(fail_at{values.view(), 0}, cube_count{1}, cube_dim{8});
  EXPECT_THROW(client().sync(), kernel_failure);
  // The context is gone: nothing may look as if it worked.
  EXPECT_THROW(client().sync(), error) << "a sync after the fault succeeded";
  EXPECT_THROW((void)client().read(values), error) << "a read after the fault succeeded";
  EXPECT_THROW((void)client().empty<int>(8), error) << "an allocation after the fault succeeded";
  EXPECT_THROW(client().launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8}), error)
      << "a launch after the fault succeeded";
}

TEST_F(CudaFaults, ReadingTheTimeOfAFaultedKernelThrowsInsteadOfWaitingForever) {
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto values = client().empty<int>(8);
  {
    launch_observation watching{keeps};
    client().launch(fail_at{values.view(), 0}, cube_count{1}, cube_dim{8});
  }
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  // Read on another thread, so a read that never returns fails this test instead of hanging it.
  auto reading = std::async(std::launch::async, [profile = std::move(kept[0].profile)]() mutable {
    return std::move(profile).resolve();
  });
  if (reading.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << "reading the faulted kernel's time still waits after 30 s";
    std::_Exit(1);  // the reading thread cannot be stopped
  }
  EXPECT_THROW((void)reading.get(), error);
}

// ---- memory ---------------------------------------------------------------------------------

// Fault table row 6: a buffer larger than the device is refused with its size, allocates nothing
// (a second request fails the same way rather than with a fault) and the device goes on working.
TEST_F(CudaMemory, AnAllocationFailureSaysOutOfMemoryWithTheSizeAndTheDeviceGoesOn) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const std::size_t too_many = total_bytes / sizeof(float) * 2;  // twice the device's memory
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      (void)client().empty<float>(too_many);
      FAIL() << "a buffer of twice the device's memory was allocated";
    } catch (const device_error& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("out of memory"));
      EXPECT_THAT(error.what(),
                  ::testing::HasSubstr(std::to_string(too_many * sizeof(float)) + " bytes"));
      EXPECT_THAT(error.what(), ::testing::Not(::testing::HasSubstr("sticky")));
    }
  }
  auto values = client().empty<int>(std::size_t{1} << 20);
  client().launch(fill{values.view(), 3}, cube_count{4096}, cube_dim{256});
  EXPECT_EQ(client().read(values), std::vector<int>(std::size_t{1} << 20, 3));
  EXPECT_NO_THROW(client().sync());
}

// ---- capture --------------------------------------------------------------------------------

TEST_F(CudaCapture, AnotherThreadAllocatesLaunchesReadsAndSyncsWhileACaptureIsOpen) {
  auto mine = client().empty<int>(8);
  std::atomic<bool> open{false};
  std::atomic<bool> finished{false};
  std::vector<int> theirs;
  std::thread other{[&] {
    while (!open.load()) std::this_thread::yield();
    auto values = client().create<int>(std::vector<int>(8, 1));
    client().launch(conformance::add_one{values.view()}, cube_count{1}, cube_dim{8});
    theirs = client().read(values);
    client().sync();
    finished.store(true);
  }};
  graph recorded = client().capture([&] {
    open.store(true);
    client().launch(fill{mine.view(), 3}, cube_count{1}, cube_dim{8});
    while (!finished.load()) std::this_thread::yield();
    client().launch(conformance::add_one{mine.view()}, cube_count{1}, cube_dim{8});
  });
  other.join();
  EXPECT_EQ(theirs, std::vector<int>(8, 2));
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(client().read(mine), std::vector<int>(8, 0));
  recorded.replay();
  EXPECT_EQ(client().read(mine), std::vector<int>(8, 4));
}

TEST_F(CudaCapture, ABufferDroppedInsideACaptureWindowIsFreedAfterTheLaunchesBeforeIt) {
  auto result = client().empty<int>(8);
  graph recorded;
  {
    auto scratch = client().empty<int>(1 << 16);
    client().launch(spin{20'000'000ull, device_span<int>{}}, cube_count{1}, cube_dim{1});
    client().launch(fill{scratch.view(), 1}, cube_count{64}, cube_dim{1024});
    client().begin_capture();
    // Dropped while its launches are queued and this stream records: the free must wait for them
    // without touching the capturing stream.
    { auto gone = std::move(scratch); }
    client().launch(fill{result.view(), 6}, cube_count{1}, cube_dim{8});
    recorded = client().end_capture();
  }
  recorded.replay();
  EXPECT_EQ(client().read(result), std::vector<int>(8, 6));
  EXPECT_NO_THROW(client().sync());
}

// ---- validation -----------------------------------------------------------------------------

TEST_F(CudaValidation, ACubeLargerThanTheKernelCanRunIsRefusedBeforeReportingEvenInADryRun) {
  cudaFuncAttributes attributes{};
  ASSERT_EQ(cudaFuncGetAttributes(&attributes, &detail::cuda_entry<register_hog>), cudaSuccess);
  if (attributes.maxThreadsPerBlock >= 1024) {
    GTEST_SKIP() << "nvcc fitted register_hog in " << attributes.numRegs
                 << " registers: no cube size to refuse";
  }
  auto out = client().empty<float>(1024);
  auto names = std::make_shared<testing::recording_observer>();
  launch_observation watching{names};
  for (const bool dry : {false, true}) {
    std::optional<dry_run_scope> maybe_dry;
    if (dry) maybe_dry.emplace();
    try {
      client().launch(register_hog{out.view()}, cube_count{1}, cube_dim{1024});
      FAIL() << "a cube of 1024 units was accepted for a kernel that can run "
             << attributes.maxThreadsPerBlock;
    } catch (const invalid_launch& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("register_hog"));
      EXPECT_THAT(error.what(), ::testing::HasSubstr("registers"));
      EXPECT_THAT(error.what(),
                  ::testing::HasSubstr("at most " + std::to_string(attributes.maxThreadsPerBlock)));
    }
  }
  EXPECT_TRUE(names->names().empty());
  // The largest cube it can run is accepted.
  client().launch(register_hog{out.view()}, cube_count{1},
                  cube_dim{static_cast<std::uint32_t>(attributes.maxThreadsPerBlock)});
  EXPECT_NO_THROW(client().sync());
}

TEST_F(CudaValidation, KernelsLaunchedInTurnAreEachCheckedAgainstTheirOwnAttributes) {
  cudaFuncAttributes hog{};
  ASSERT_EQ(cudaFuncGetAttributes(&hog, &detail::cuda_entry<register_hog>), cudaSuccess);
  if (hog.maxThreadsPerBlock >= 1024) {
    GTEST_SKIP() << "nvcc fitted register_hog in " << hog.numRegs
                 << " registers: no cube size tells its attributes from another kernel's";
  }
  auto out = client().empty<int>(1024);
  auto floats = client().empty<float>(1024);
  // More kernels than a thread remembers the attributes of, so some share a place there.
  constexpr int kernels = 80;
  for (int round = 0; round < 3; ++round) {
    EXPECT_NO_THROW(
        launch_each_tagged(client(), out, 1024, std::make_integer_sequence<int, kernels>{}))
        << "round " << round;
    EXPECT_THROW(client().launch(register_hog{floats.view()}, cube_count{1}, cube_dim{1024}),
                 invalid_launch)
        << "round " << round;
  }
  EXPECT_EQ(client().read(out), std::vector<int>(1024, kernels - 1));
}

TEST_F(CudaValidation, AKernelLaunchedFromAFileNvccDidNotCompileIsRefusedSayingWhatToDo) {
  auto out = client().empty<int>(8);
  auto names = std::make_shared<testing::recording_observer>();
  launch_observation watching{names};
  try {
    launch_from_a_host_only_file(client(), out);
    FAIL() << "a kernel with no CUDA entry was accepted";
  } catch (const invalid_launch& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("host_only_fill"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("not compiled by nvcc"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("LANGUAGE CUDA"));
  }
  EXPECT_TRUE(names->names().empty());
  EXPECT_EQ(client().read(out), std::vector<int>(8, 0));
}

}  // namespace launchwatch::cuda_testing
