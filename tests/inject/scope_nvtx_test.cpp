// Scopes as NVTX ranges, heard by a fake NVTX tool attached in-process (fake_nvtx_tool.cpp).

#include <string_view>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>

#include "attribute/launch_paths.hpp"
#include "attribute/scope_nvtx.hpp"
#include "fake_nvtx_tool.hpp"

namespace launchwatch {
namespace {

using ::testing::ElementsAre;
using testing::heard_ranges;

class ScopesAsNvtx : public ::testing::Test {
 protected:
  void SetUp() override { testing::forget_heard_ranges(); }
};

TEST_F(ScopesAsNvtx, AnAttachedToolIsFoundBeforeTheFirstScope) {
  EXPECT_TRUE(detail::scopes_go_to_nvtx());
  EXPECT_TRUE(detail::attributing.load());  // so scopes leave their idle path
}

TEST_F(ScopesAsNvtx, ScopesAreRangesOnTheLaunchwatchDomainWithNoAttributionAlive) {
  {
    scope model{"model"};
    scope layer{"layer 0"};
  }
  EXPECT_THAT(heard_ranges(), ElementsAre("push launchwatch:model", "push launchwatch:layer 0", "pop launchwatch",
                                          "pop launchwatch"));
}

TEST_F(ScopesAsNvtx, WhileAttributingScopesAreRangesAndPathsAlike) {
  const auto pass = attribute_pass([] {
    scope model{"model"};
    testing::launch("k");
  });
  ASSERT_EQ(pass.launches.size(), 1u);
  ASSERT_TRUE(pass.launches[0].scope.has_value());
  EXPECT_EQ(pass.scope_path_text(*pass.launches[0].scope), "model");
  EXPECT_THAT(heard_ranges(), ElementsAre("push launchwatch:model", "pop launchwatch"));
}

TEST_F(ScopesAsNvtx, ToolStaysAttachedAfterTheLastAttributionEnds) {
  { attribution alive; }
  { scope after{"after"}; }
  EXPECT_TRUE(detail::attributing.load());
  EXPECT_THAT(heard_ranges(), ElementsAre("push launchwatch:after", "pop launchwatch"));
}

TEST_F(ScopesAsNvtx, EachThreadsScopesAreItsOwnRanges) {
  std::thread{[] { scope worker{"worker"}; }}.join();
  EXPECT_THAT(heard_ranges(), ElementsAre("push launchwatch:worker", "pop launchwatch"));
}

}  // namespace
}  // namespace launchwatch
