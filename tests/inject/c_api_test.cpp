// The injection's C API (src/inject/c_api.hpp), in-process: the ranges launchwatch's Python package
// opens around modules and optimizer steps, and the backward pass's ranges on another thread.

#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/attribute/attribution.hpp>

#include "attribute/launch_paths.hpp"
#include "c_api.hpp"
#include "nvtx_ranges.hpp"

namespace launchwatch {
namespace {

using ::testing::ElementsAre;
using testing::launch;
using testing::launch_paths;

TEST(InjectCApi, SaysItsVersion) { EXPECT_EQ(launchwatch_c_api_version(), 1); }

TEST(InjectCApi, PushedRangesNestIntoThePathALaunchIsPairedWith) {
  const auto pass = attribute_pass([] {
    EXPECT_EQ(launchwatch_range_push("ResNet"), 0);
    EXPECT_EQ(launchwatch_range_push("layer1"), 1);
    launch("conv");
    EXPECT_EQ(launchwatch_range_pop_to(1), 1);
    launch("fc");
    EXPECT_EQ(launchwatch_range_pop_to(0), 0);
    launch("after");
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("ResNet/layer1", "ResNet", ""));
}

TEST(InjectCApi, PopToADepthClosesEveryRangeAboveItAtOnce) {
  const auto pass = attribute_pass([] {
    launchwatch_range_push("ResNet");
    launchwatch_range_push("layer1");
    launchwatch_range_push("conv1");  // its forward raised: no hook closed it
    EXPECT_EQ(launchwatch_range_pop_to(1), 1);
    launch("k");
    launchwatch_range_pop_to(0);
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("ResNet"));
}

TEST(InjectCApi, PopToADepthDeeperThanWhatIsOpenDoesNothing) {
  const auto pass = attribute_pass([] {
    launchwatch_range_push("a");
    EXPECT_EQ(launchwatch_range_pop_to(5), 1);
    launch("k");
    EXPECT_EQ(launchwatch_range_pop_to(-3), 0);
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("a"));
}

TEST(InjectCApi, ARangePushedUnderAnotherThreadsPathNestsBelowIt) {
  const auto pass = attribute_pass([] {
    launchwatch_range_push("step");
    launchwatch_range_push("backward");
    const auto caller = launchwatch_current_path();
    EXPECT_NE(caller, 0u);
    std::thread autograd{[caller] {
      EXPECT_EQ(launchwatch_range_push_under(caller, "ResNet"), 0);
      launchwatch_range_push("fc");
      launch("fc backward");
      launchwatch_range_pop_to(0);
      EXPECT_EQ(launchwatch_current_path(), 0u);
    }};
    autograd.join();
    launchwatch_range_pop_to(0);
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("step/backward/ResNet/fc"));
}

// Finding 11 of review 2026-12-01b across the C API's domain and the program's own NVTX ranges.
TEST(InjectCApi, ClosingTheModulesRangesLeavesAProgramsNvtxRangeOpenedInsideThemOpen) {
  const auto pass = attribute_pass([] {
    launchwatch_range_push("model");
    detail::push_domain_range(nullptr, "user range");  // the program's nvtxRangePushA
    launchwatch_range_pop_to(0);
    launch("k");
    detail::pop_domain_ranges_to(nullptr, 0);
    launch("after");
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("user range", ""));
}

TEST(InjectCApi, ARangeUnderAnotherThreadsPathKeptOpenAcrossAPopStaysBelowThatPath) {
  const auto pass = attribute_pass([] {
    launchwatch_range_push("step");
    launchwatch_range_push("backward");
    const auto caller = launchwatch_current_path();
    std::thread autograd{[caller] {
      detail::push_domain_range(nullptr, "engine");  // an NVTX range of the autograd thread
      launchwatch_range_push_under(caller, "ResNet");
      detail::pop_domain_ranges_to(nullptr, 0);
      launch("fc backward");
      launchwatch_range_pop_to(0);
    }};
    autograd.join();
    launchwatch_range_pop_to(0);
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("step/backward/ResNet"));
}

/// The launch scope hook's test state: the ranges it opens for the "node" the thread runs.
thread_local const char* running_node = nullptr;
thread_local const char* opened_for = nullptr;
thread_local int hook_calls = 0;

void open_ranges_for_the_running_node() {
  ++hook_calls;
  if (running_node == opened_for) return;
  launchwatch_range_pop_to(0);
  if (running_node != nullptr) launchwatch_range_push(running_node);
  opened_for = running_node;
}

TEST(InjectCApi, ALaunchScopeHookRunsOnTheLaunchingThreadBeforeItsLaunchIsAttributed) {
  EXPECT_EQ(launchwatch_set_launch_scope_hook(&open_ranges_for_the_running_node), 1);
  const auto pass = attribute_pass([] {
    running_node = "conv1";
    launch("a");
    launch("b");
    running_node = "fc";
    launch("c");
    running_node = nullptr;
    launch("d");
  });
  EXPECT_EQ(launchwatch_set_launch_scope_hook(nullptr), 1);
  EXPECT_EQ(hook_calls, 4);
  EXPECT_THAT(launch_paths(pass), ElementsAre("conv1", "conv1", "fc", ""));
  running_node = "after";
  const auto unhooked = attribute_pass([] { launch("e"); });
  EXPECT_EQ(hook_calls, 4) << "a removed hook ran";
  EXPECT_THAT(launch_paths(unhooked), ElementsAre(""));
  running_node = nullptr;
}

TEST(InjectCApi, ANullNameIsAnUnnamedRange) {
  const auto pass = attribute_pass([] {
    launchwatch_range_push(nullptr);
    launch("k");
    launchwatch_range_pop_to(0);
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("(unnamed range)"));
}

}  // namespace
}  // namespace launchwatch
