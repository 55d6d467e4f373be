// client::vulkan() in a build without the Vulkan backend.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

namespace launchwatch {
namespace {

TEST(VulkanNotBuilt, ClientVulkanThrowsBackendUnavailableSayingWhatToInstall) {
  try {
    (void)client::vulkan(0);
    FAIL() << "client::vulkan() returned in a build without Vulkan";
  } catch (const backend_unavailable& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("no Vulkan backend"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("glslang-tools"));
  }
}

}  // namespace
}  // namespace launchwatch
