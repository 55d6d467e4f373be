// LAUNCHWATCH_VULKAN_TIMESTAMPS: what each spelling gives. Needs no device.

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/errors.hpp>

#include "backend/vulkan/environment.hpp"

namespace launchwatch::detail {
namespace {

TEST(VulkanTimestampsVariable, AWholeNumberIsTheBudgetInPairs) {
  EXPECT_EQ(parse_vulkan_timestamps("0"), 0u);
  EXPECT_EQ(parse_vulkan_timestamps("1"), 1u);
  EXPECT_EQ(parse_vulkan_timestamps("4096"), 4096u);
  EXPECT_EQ(parse_vulkan_timestamps(std::to_string(max_vulkan_timestamp_pairs)),
            max_vulkan_timestamp_pairs);
}

TEST(VulkanTimestampsVariable, AnythingElseIsRefusedNamingTheVariableAndTheRange) {
  for (const std::string bad : {"", "-1", "+4", " 4", "4 ", "1e3", "0x10", "four", "1048577",
                                "99999999999999999999999"}) {
    try {
      (void)parse_vulkan_timestamps(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const configuration_error& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("LAUNCHWATCH_VULKAN_TIMESTAMPS"));
      EXPECT_THAT(error.what(), ::testing::HasSubstr("from 0"));
    }
  }
}

TEST(VulkanTimestampsVariable, AControlByteIsShownEscaped) {
  try {
    (void)parse_vulkan_timestamps(std::string{"1\n2", 3});
    FAIL();
  } catch (const configuration_error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("1\\x0a2"));
  }
}

}  // namespace
}  // namespace launchwatch::detail
