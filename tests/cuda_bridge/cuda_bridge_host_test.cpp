// What the CUDA bridge says before it touches a GPU: LAUNCHWATCH_CUPTI, and a machine without one.
// Runs everywhere the bridge is built, CI included.
#include <launchwatch/cuda_bridge.hpp>

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cuda_bridge/cupti_functions.hpp"
#include "cuda_bridge/versions.hpp"

namespace launchwatch {
namespace {

using ::testing::AllOf;
using detail::cuda_bridge::versions_misfit;
using ::testing::HasSubstr;

/// Sets LAUNCHWATCH_CUPTI for one test.
class with_cupti_variable {
 public:
  explicit with_cupti_variable(const char* value) { ::setenv("LAUNCHWATCH_CUPTI", value, 1); }
  ~with_cupti_variable() { ::unsetenv("LAUNCHWATCH_CUPTI"); }
  with_cupti_variable(const with_cupti_variable&) = delete;
  with_cupti_variable& operator=(const with_cupti_variable&) = delete;
};

TEST(CudaBridgeHost, ThisBuildHasTheBridge) { EXPECT_TRUE(cuda_bridge::built()); }

TEST(CudaBridgeHost, LaunchwatchCuptiOffTurnsTheBridgeOffSayingHowToTurnItOn) {
  with_cupti_variable off{"off"};
  try {
    cuda_bridge bridge;
    FAIL() << "the bridge started with LAUNCHWATCH_CUPTI=off";
  } catch (const cuda_bridge_unavailable& error) {
    EXPECT_EQ(error.why(), cuda_bridge_unavailable::reason::turned_off);
    EXPECT_THAT(error.what(), AllOf(HasSubstr("LAUNCHWATCH_CUPTI=off"), HasSubstr("Unset it")));
  }
}

TEST(CudaBridgeHost, ABadLaunchwatchCuptiValueIsAConfigurationErrorNamingTheAcceptedValues) {
  with_cupti_variable bad{"maybe"};
  try {
    cuda_bridge bridge;
    FAIL() << "the bridge started with LAUNCHWATCH_CUPTI=maybe";
  } catch (const configuration_error& error) {
    EXPECT_THAT(error.what(),
                AllOf(HasSubstr("LAUNCHWATCH_CUPTI"), HasSubstr("`maybe`"), HasSubstr("on, off")));
  }
}

TEST(CudaBridgeHost, AProgramThatOptsOutOfTheEnvironmentIsNotTurnedOffByIt) {
  with_cupti_variable off{"off"};
  try {
    cuda_bridge bridge{cuda_bridge_options{.read_environment = false}};
  } catch (const cuda_bridge_unavailable& error) {
    EXPECT_NE(error.why(), cuda_bridge_unavailable::reason::turned_off) << error.what();
  }
}

TEST(CudaBridgeHost, TimingWindowsOfNoLengthAreAConfigurationErrorAndLeaveCuptiFree) {
  cuda_bridge_options options;
  options.timing_windows = cuda_timing_windows{std::chrono::milliseconds{200}, std::chrono::milliseconds{0}};
  try {
    cuda_bridge bridge{options};
    FAIL() << "a bridge started with windows of 0 ms off";
  } catch (const configuration_error& error) {
    EXPECT_THAT(error.what(), AllOf(HasSubstr("timing_windows"), HasSubstr("200 ms on and 0 ms off"),
                                    HasSubstr("positive")));
  }
  // Nothing was subscribed: a bridge now starts, or is refused for this machine's own reasons.
  try {
    cuda_bridge bridge;
  } catch (const cuda_bridge_unavailable& error) {
    EXPECT_NE(error.why(), cuda_bridge_unavailable::reason::cupti_in_use) << error.what();
  }
}

TEST(CudaBridgeHost, WithoutADeviceTheBridgeSaysThereIsNone) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    GTEST_SKIP() << "this machine has a CUDA device";
  }
  try {
    cuda_bridge bridge;
    FAIL() << "the bridge started without a device";
  } catch (const cuda_bridge_unavailable& error) {
    EXPECT_THAT(error.why(), ::testing::AnyOf(cuda_bridge_unavailable::reason::no_device,
                                              cuda_bridge_unavailable::reason::incompatible));
    EXPECT_THAT(error.what(), HasSubstr("CUDA"));
  }
}

// CUPTI found at run time (cuda_bridge/cupti_functions.hpp): where the toolkit has it, every
// function the bridge calls is in it under the name the bridge asks for.
TEST(CudaBridgeHost, TheCuptiFoundHereHasEveryFunctionTheBridgeCalls) {
  using detail::cuda_bridge::cupti_functions;
  const cupti_functions* cupti = nullptr;
  try {
    cupti = &detail::cuda_bridge::load_cupti();
  } catch (const cuda_bridge_unavailable& error) {
    GTEST_SKIP() << "no CUPTI here: " << error.what();
  }
  EXPECT_THAT(cupti->path, HasSubstr("libcupti.so"));
#define LAUNCHWATCH_EXPECT_FOUND(member, function) \
  EXPECT_NE(cupti->member, nullptr) << #function;
  LAUNCHWATCH_CUPTI_FUNCTIONS(LAUNCHWATCH_EXPECT_FOUND)
#undef LAUNCHWATCH_EXPECT_FOUND
  std::uint32_t version = 0;
  EXPECT_EQ(cupti->get_version(&version), CUPTI_SUCCESS);
  EXPECT_GT(version, 0u);
}

// Versions that do not fit, each with what to do (cuda_bridge/versions.hpp), whatever this machine
// has.

TEST(CudaBridgeVersions, ACuptiOlderThanTheOneBuiltAgainstIsRefusedNamingBothAndWhatToDo) {
  const auto misfit = versions_misfit({.cupti_loaded = 120000, .cupti_built = 130001,
                                       .driver = 13000, .runtime = 13000});
  ASSERT_TRUE(misfit.has_value());
  EXPECT_THAT(*misfit, HasSubstr("CUPTI API 120000 (launchwatch was built against 130001)"));
  EXPECT_THAT(*misfit, HasSubstr("Put the toolkit's libcupti first on the library path"));
}

TEST(CudaBridgeVersions, ADriverOfAnOlderMajorVersionThanTheRuntimeIsRefusedNamingBothAndWhatToDo) {
  const auto misfit = versions_misfit({.cupti_loaded = 130001, .cupti_built = 130001,
                                       .driver = 12080, .runtime = 13000});
  ASSERT_TRUE(misfit.has_value());
  EXPECT_THAT(*misfit, HasSubstr("CUDA driver 12.8, CUDA runtime 13.0"));
  EXPECT_THAT(*misfit, HasSubstr("Update the driver"));
}

TEST(CudaBridgeVersions, VersionsThatFitOrAreUnknownAreNotHeldAgainstTheBridge) {
  EXPECT_FALSE(versions_misfit({.cupti_loaded = 130001, .cupti_built = 130001,
                                .driver = 13000, .runtime = 13000}));
  EXPECT_FALSE(versions_misfit({.cupti_loaded = 130002, .cupti_built = 130001,
                                .driver = 13010, .runtime = 13000}));
  EXPECT_FALSE(versions_misfit({.cupti_loaded = 130001, .cupti_built = 130001,
                                .driver = 0, .runtime = 13000}));
  // Minor version compatibility: a 12.2 driver runs a 12.4 runtime.
  EXPECT_FALSE(versions_misfit({.cupti_loaded = 130001, .cupti_built = 130001,
                                .driver = 12020, .runtime = 12040}));
}

}  // namespace
}  // namespace launchwatch
