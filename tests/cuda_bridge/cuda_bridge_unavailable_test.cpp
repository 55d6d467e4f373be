// cuda_bridge in a build that cannot run it: it links, and says what was not built.
#include <launchwatch/cuda_bridge.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using launchwatch::cuda_bridge;
using launchwatch::cuda_bridge_unavailable;

TEST(CudaBridgeUnavailable, ConstructingOneThrowsSayingCudaWasNotBuilt) {
  ASSERT_FALSE(cuda_bridge::built());
  try {
    cuda_bridge bridge;
    FAIL() << "a bridge started in a build without it";
  } catch (const cuda_bridge_unavailable& error) {
    EXPECT_EQ(error.why(), cuda_bridge_unavailable::reason::not_built);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("not built"));
    EXPECT_TRUE(error.holder().empty());
  }
}

TEST(CudaBridgeUnavailable, IsCaughtAsABackendBeingUnavailable) {
  EXPECT_THROW(static_cast<void>(cuda_bridge{}), launchwatch::backend_unavailable);
}

}  // namespace
