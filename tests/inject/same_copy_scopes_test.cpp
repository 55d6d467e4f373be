// See same_copy_test.cpp: the tests, with NVTX's implementation compiled in.

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nvtx3/nvToolsExt.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>

#include "attribute/launch_paths.hpp"
#include "attribute/scope_nvtx.hpp"

namespace launchwatch {
namespace {

using ::testing::ElementsAre;
using testing::launch;
using testing::launch_paths;

TEST(SameCopy, ScopesGoToTheInjectionAsRanges) { EXPECT_TRUE(detail::scopes_go_to_nvtx()); }

TEST(SameCopy, AScopeIsEnteredOnceThoughTheInjectionHearsItsRange) {
  const auto pass = attribute_pass([] {
    scope model{"model"};
    scope layer{"layer"};
    launch("k");
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("model/layer"));
}

TEST(SameCopy, TheProgramsNvtxRangesAndScopesMakeOnePath) {
  const auto pass = attribute_pass([] {
    nvtxRangePushA("step");
    {
      scope model{"model"};
      nvtxRangePushA("gemm");
      launch("k");
      nvtxRangePop();
    }
    nvtxRangePop();
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("step/model/gemm"));
}

}  // namespace
}  // namespace launchwatch
