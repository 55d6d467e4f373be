// What the Vulkan backend does beyond the conformance suite: kernels whose fields exceed the push
// constants, kernels without a shader, batches, the clock mapping, and what it says about itself.
// Every kernel's result is checked against the same kernel on the CPU backend.

#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/launchwatch.hpp>

#include "conformance/conformance_kernels.hpp"
#include "support/recording_observer.hpp"
#include "vulkan/vulkan_backend.hpp"
#include "vulkan_test_shaders.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using conformance::add_one;
using conformance::fill;
using conformance::spin;

/// out = a + b + c + d + bias: five spans and an int, 168 bytes.
struct sum_five {
  device_span<const int> a, b, c, d;
  device_span<int> out;
  int bias;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    const auto i = u.absolute_pos();
    if (i < out.size()) out[i] = a[i] + b[i] + c[i] + d[i] + bias;
  }
  static constexpr vulkan_shader vulkan = vulkan_testing::shaders::sum_five;
};

/// A kernel with no compute shader.
struct host_only {
  device_span<int> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    if (u.absolute_pos() < out.size()) out[u.absolute_pos()] = 1;
  }
};

class VulkanBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = conformance::vulkan_backend::unavailable()) GTEST_SKIP() << *why;
  }
};

template <class K>
std::vector<int> run_sum_five(client on, int n) {
  std::vector<int> ramp(static_cast<std::size_t>(n));
  std::iota(ramp.begin(), ramp.end(), 0);
  auto a = on.create<int>(ramp), b = on.create<int>(ramp), c = on.create<int>(ramp),
       d = on.create<int>(ramp);
  auto out = on.empty<int>(static_cast<std::size_t>(n));
  on.launch(K{a.view(), b.view(), c.view(), d.view(), out.view(), 7}, cube_count{(n + 63) / 64},
            cube_dim{64});
  return on.read(out);
}

TEST_F(VulkanBackend, AKernelLargerThanThePushConstantsRunsAsOnTheCpu) {
  static_assert(sizeof(sum_five) > 128, "must exceed lavapipe's push constants");
  EXPECT_EQ(run_sum_five<sum_five>(client::vulkan(), 1000), run_sum_five<sum_five>(client::cpu(), 1000));
}

TEST_F(VulkanBackend, AKernelWithoutAShaderIsRejectedBeforeReportingSayingWhatToAdd) {
  auto client = client::vulkan();
  auto values = client.empty<int>(8);
  auto names = std::make_shared<testing::recording_observer>();
  launch_observation watching{names};
  try {
    client.launch(host_only{values.view()}, cube_count{1}, cube_dim{8});
    FAIL() << "a kernel without a shader was accepted";
  } catch (const invalid_launch& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("host_only"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("static constexpr launchwatch::vulkan_shader"));
  }
  EXPECT_TRUE(names->names().empty());
}

TEST_F(VulkanBackend, MoreLaunchesThanABatchHoldsRunInOrder) {
  auto client = client::vulkan();
  auto values = client.empty<int>(64);
  constexpr int launches = 1000;  // batches of 32, 64, 128, then 256
  for (int i = 0; i < launches; ++i) client.launch(add_one{values.view()}, cube_count{1}, cube_dim{64});
  EXPECT_EQ(client.read(values), std::vector<int>(64, launches));
}

TEST_F(VulkanBackend, AGraphReplayedMoreTimesThanABatchHoldsRunsEveryLaunch) {
  auto client = client::vulkan();
  auto values = client.empty<int>(16);
  graph g = client.capture([&] {
    for (int i = 0; i < 3; ++i) client.launch(add_one{values.view()}, cube_count{1}, cube_dim{16});
  });
  for (int r = 0; r < 100; ++r) g.replay();
  EXPECT_EQ(client.read(values), std::vector<int>(16, 300));
}

TEST_F(VulkanBackend, ADeviceMeasurementLiesInsideTheHostWindowAroundItsLaunchAndWait) {
  auto client = client::vulkan();
  auto done = client.empty<int>(1);
  client.launch(spin{1'000ull, done.view()}, cube_count{1}, cube_dim{1});  // pipeline warm
  client.sync();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  const auto before = std::chrono::steady_clock::now();
  {
    launch_observation watching{keeps};
    client.launch(spin{5'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
  }
  client.sync();
  const auto after = std::chrono::steady_clock::now();
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  ASSERT_EQ(kept[0].profile.method(), timing_method::device);
  const auto ticks = std::move(kept[0].profile).resolve();
  ASSERT_TRUE(ticks.has_value());
  // Mapped through calibrated timestamps; NVIDIA's anchors are good to about 3 us.
  EXPECT_GE(ticks->start(), before - 50us);
  EXPECT_LE(ticks->end(), after + 50us);
  EXPECT_GE(ticks->length(), 4ms);
}

// A stream with nothing in flight submits its first batch after a few launches (32), not a full
// batch's 256: the device starts while the host goes on, as a CUDA stream would.
TEST_F(VulkanBackend, AfterASyncTheFirstLaunchesRunWithoutWaitingForAFullBatchOrASync) {
  auto client = client::vulkan();
  auto done = client.empty<int>(1);
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  {
    // The timed pipeline made and compiled (lavapipe compiles at a pipeline's first dispatch, for
    // ~170 ms), and the clock calibrated, before anything is measured.
    launch_observation watching{keeps};
    client.launch(spin{1'000ull, done.view()}, cube_count{1}, cube_dim{1});
  }
  client.sync();
  for (auto& warm : keeps->take_profiles()) (void)std::move(warm.profile).resolve();
  {
    launch_observation watching{keeps};
    for (int i = 0; i < 33; ++i)
      client.launch(spin{1'000ull, done.view()}, cube_count{1}, cube_dim{1});
  }
  const auto launched = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(300ms);
  client.sync();
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), 33u);
  ASSERT_EQ(kept[0].profile.method(), timing_method::device);
  const auto first = std::move(kept[0].profile).resolve();
  const auto last_of_batch = std::move(kept[31].profile).resolve();
  ASSERT_TRUE(first.has_value() && last_of_batch.has_value());
  // Submitted with the 33rd launch, so they ran long before the sync 300 ms later.
  EXPECT_LT(first->start(), launched + 150ms);
  EXPECT_LT(last_of_batch->end(), launched + 150ms);
}

TEST_F(VulkanBackend, ReportsItsBackendAndAName) {
  auto client = client::vulkan();
  EXPECT_EQ(client.backend(), "vulkan");
  EXPECT_FALSE(client.device_name().empty());
}

TEST_F(VulkanBackend, AnIndexPastTheLastDeviceIsUnavailableSayingHowManyThereAre) {
  try {
    (void)client::vulkan(1000);
    FAIL() << "device 1000 was opened";
  } catch (const backend_unavailable& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("usable device"));
  }
}

}  // namespace
}  // namespace launchwatch
