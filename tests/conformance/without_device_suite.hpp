// What a GPU backend's client says where no device is visible, written once and typed over CUDA and
// HIP: run by each backend's host tests, everywhere (CI included); skips where a device is visible.
// The fixture (cuda/cuda_backend.hpp, hip/hip_backend.hpp) adds `client_call`, the entry point as
// its messages name it ("client::cuda(0)").
#pragma once

#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

namespace launchwatch::conformance {

/// Fills every element it has a unit for with 1: a launch on the CPU backend after the refusal.
struct fill_ones_on_the_host {
  device_span<int> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    if (u.absolute_pos() < out.size()) out[u.absolute_pos()] = 1;
  }
};

template <class Backend>
class backend_without_device : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Backend::unavailable()) GTEST_SKIP() << "a device is visible here";
  }
};
TYPED_TEST_SUITE_P(backend_without_device);

TYPED_TEST_P(backend_without_device,
             TheClientThrowsBackendUnavailableSayingThereIsNoDeviceAndWhatToUse) {
  try {
    (void)TypeParam::make_client();
    FAIL() << TypeParam::client_call << " returned without a device";
  } catch (const backend_unavailable& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr(TypeParam::client_call));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("client::cpu()"));
  }
}

TYPED_TEST_P(backend_without_device, TheCpuBackendWorksAfterTheBackendWasRefused) {
  EXPECT_THROW((void)TypeParam::make_client(), backend_unavailable);
  auto cpu = client::cpu();
  auto values = cpu.empty<int>(16);
  cpu.launch(fill_ones_on_the_host{values.view()}, cube_count{2}, cube_dim{8});
  EXPECT_EQ(cpu.read(values), std::vector<int>(16, 1));
}

REGISTER_TYPED_TEST_SUITE_P(backend_without_device,
                            TheClientThrowsBackendUnavailableSayingThereIsNoDeviceAndWhatToUse,
                            TheCpuBackendWorksAfterTheBackendWasRefused);

}  // namespace launchwatch::conformance
