// See same_copy_test.cpp: the tests, with NVTX's implementation compiled in.

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nvtx3/nvToolsExt.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/launch_path.hpp>

#include "attribute/scope_nvtx.hpp"

namespace launchwatch {
namespace {

using ::testing::ElementsAre;

void launch() {
  launch_info info;
  info.kernel = "k";
  launch_path::notify_launch(info);
}

std::vector<std::string> launch_paths(const pass_record& pass) {
  std::vector<std::string> paths;
  for (const auto& l : pass.launches) paths.push_back(l.scope ? pass.scope_path_text(*l.scope) : "");
  return paths;
}

TEST(SameCopy, ScopesGoToTheInjectionAsRanges) { EXPECT_TRUE(detail::scopes_go_to_nvtx()); }

TEST(SameCopy, AScopeIsEnteredOnceThoughTheInjectionHearsItsRange) {
  const auto pass = attribute_pass([] {
    scope model{"model"};
    scope layer{"layer"};
    launch();
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("model/layer"));
}

TEST(SameCopy, TheProgramsNvtxRangesAndScopesMakeOnePath) {
  const auto pass = attribute_pass([] {
    nvtxRangePushA("step");
    {
      scope model{"model"};
      nvtxRangePushA("gemm");
      launch();
      nvtxRangePop();
    }
    nvtxRangePop();
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("step/model/gemm"));
}

}  // namespace
}  // namespace launchwatch
