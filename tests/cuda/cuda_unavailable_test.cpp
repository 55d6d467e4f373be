// client::cuda() in a build without the CUDA backend.

#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/runtime/client.hpp>
#include <launchwatch/errors.hpp>

namespace launchwatch::cuda_testing {
namespace {

struct fill_ones {
  device_span<int> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    if (u.absolute_pos() < out.size()) out[u.absolute_pos()] = 1;
  }
};

TEST(CudaNotBuilt, ClientCudaThrowsBackendUnavailableSayingHowToGetIt) {
  try {
    (void)client::cuda(0);
    FAIL() << "client::cuda() returned in a build without CUDA";
  } catch (const backend_unavailable& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("no CUDA backend"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("LAUNCHWATCH_CUDA=ON"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("client::cpu()"));
  }
}

TEST(CudaNotBuilt, TheCpuBackendWorksAfterCudaWasRefused) {
  EXPECT_THROW((void)client::cuda(), backend_unavailable);
  auto cpu = client::cpu();
  auto values = cpu.empty<int>(16);
  cpu.launch(fill_ones{values.view()}, cube_count{2}, cube_dim{8});
  EXPECT_EQ(cpu.read(values), std::vector<int>(16, 1));
}

}  // namespace
}  // namespace launchwatch::cuda_testing
