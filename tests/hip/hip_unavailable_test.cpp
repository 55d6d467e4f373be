// client::hip() in a build without the HIP backend.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

namespace launchwatch::hip_testing {
namespace {

TEST(HipNotBuilt, ClientHipThrowsBackendUnavailableSayingHowToGetIt) {
  try {
    (void)client::hip(0);
    FAIL() << "client::hip() returned in a build without HIP";
  } catch (const backend_unavailable& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("no HIP backend"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("LAUNCHWATCH_HIP=ON"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("client::cpu()"));
  }
}

}  // namespace
}  // namespace launchwatch::hip_testing
