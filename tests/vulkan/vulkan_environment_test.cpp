// LAUNCHWATCH_VULKAN_TIMESTAMPS, LAUNCHWATCH_VULKAN_CLOCK_SLOTS and
// LAUNCHWATCH_VULKAN_GRID_OVERHEAD_NS: what each spelling gives. Needs no device.

#include <chrono>
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

TEST(VulkanClockSlotsVariable, AWholeNumberIsTheSlotsAndZeroTurnsTheShaderClockOff) {
  EXPECT_EQ(parse_vulkan_clock_slots("0"), 0u);
  EXPECT_EQ(parse_vulkan_clock_slots("1"), 1u);
  EXPECT_EQ(parse_vulkan_clock_slots("4352"), 4352u);
  EXPECT_EQ(parse_vulkan_clock_slots(std::to_string(max_vulkan_clock_slots)),
            max_vulkan_clock_slots);
}

TEST(VulkanClockSlotsVariable, AnythingElseIsRefusedNamingTheVariableAndTheRange) {
  for (const std::string bad : {"", "-1", " 4", "4k", "65537", "99999999999999999999999"}) {
    try {
      (void)parse_vulkan_clock_slots(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const configuration_error& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("LAUNCHWATCH_VULKAN_CLOCK_SLOTS"));
      EXPECT_THAT(error.what(), ::testing::HasSubstr("from 0 (time with timestamp queries"));
    }
  }
}

TEST(VulkanGridOverheadVariable, AWholeNumberIsNanoseconds) {
  EXPECT_EQ(parse_vulkan_grid_overhead("0"), std::chrono::nanoseconds{0});
  EXPECT_EQ(parse_vulkan_grid_overhead("2200"), std::chrono::nanoseconds{2200});
  EXPECT_EQ(parse_vulkan_grid_overhead("100000"), std::chrono::nanoseconds{100'000});
}

TEST(VulkanGridOverheadVariable, AnythingElseIsRefusedSayingWhatItMeasures) {
  for (const std::string bad : {"", "2.2us", "-5", "100001"}) {
    try {
      (void)parse_vulkan_grid_overhead(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const configuration_error& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("LAUNCHWATCH_VULKAN_GRID_OVERHEAD_NS"));
      EXPECT_THAT(error.what(), ::testing::HasSubstr("beyond its shader's own window"));
    }
  }
}

}  // namespace
}  // namespace launchwatch::detail
