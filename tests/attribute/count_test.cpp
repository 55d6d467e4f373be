// count_launches and the GoogleTest matchers users assert launch counts with.

#include <launchwatch/attribute/count.hpp>
#include <launchwatch/attribute/testing.hpp>
#include <launchwatch/dry_run.hpp>
#include <launchwatch/launch_path.hpp>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launch_paths.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Le;
using ::testing::Not;
using namespace launchwatch::testing;

static_assert(!std::is_copy_constructible_v<launch_counting>);
static_assert(!std::is_move_constructible_v<launch_counting>);

constexpr std::string_view matmul_f = "demo::ops::matmul<float, 16>";
constexpr std::string_view matmul_h = "demo::ops::matmul<half, 16>";
constexpr std::string_view softmax = "demo::ops::softmax<float>";

/// What a small block launches: two matmul instantiations and a softmax.
void block() {
  launch(matmul_f);
  launch(softmax);
  launch(matmul_f);
  launch(matmul_h);
}

std::string explain(const ::testing::Matcher<const launch_counts&>& matcher, const launch_counts& counts) {
  ::testing::StringMatchResultListener listener;
  EXPECT_FALSE(matcher.MatchAndExplain(counts, &listener));
  return listener.str();
}

TEST(CountLaunches, CountsEachKernelInTheOrderFirstLaunched) {
  const auto counts = count_launches(block);
  EXPECT_EQ(counts.total(), 4u);
  EXPECT_THAT(counts.kernels(),
              ElementsAre(launch_counts::entry{std::string{matmul_f}, 2},
                          launch_counts::entry{std::string{softmax}, 1},
                          launch_counts::entry{std::string{matmul_h}, 1}));
}

TEST(CountLaunches, CountsWithoutAskingForTiming) {
  bool timing_wanted = true;
  (void)count_launches([&] { timing_wanted = launch_path::timing_wanted(); });
  EXPECT_FALSE(timing_wanted);
}

TEST(CountLaunches, CountsLaunchesFromOtherThreads) {
  const auto counts = count_launches([] {
    std::thread a{block};
    std::thread b{block};
    a.join();
    b.join();
  });
  EXPECT_EQ(counts.total(), 8u);
}

TEST(CountLaunches, CountsADryRunWithoutRunningIt) {
  const auto counts = count_launches([] {
    dry_run_scope dry;
    block();
  });
  EXPECT_EQ(counts.total(), 4u);
}

TEST(CountLaunches, PutsBackTheObserverItReplaced) {
  auto outer = std::make_shared<testing::recording_observer>();
  launch_observation watching{outer};
  (void)count_launches(block);
  launch("after");
  EXPECT_THAT(outer->names(), ElementsAre("after"));
}

TEST(LaunchCounts, FindsKernelsByFullBalancedOrBriefName) {
  const auto counts = count_launches(block);
  EXPECT_EQ(counts.of(matmul_f), 2u);
  EXPECT_EQ(counts.of("matmul | float | 16"), 2u);
  EXPECT_EQ(counts.of("matmul"), 3u);
  EXPECT_EQ(counts.of("gelu"), 0u);
  EXPECT_EQ(counts.by_brief_name(), (std::map<std::string, std::size_t>{{"matmul", 3}, {"softmax", 1}}));
}

TEST(LaunchCounts, RefusesAKernelListedTwice) {
  EXPECT_THROW((launch_counts{{{"k", 1}, {"k", 2}}}), std::invalid_argument);
}

TEST(LaunchCounts, PrintsWhatWasLaunched) {
  std::ostringstream out;
  out << count_launches(block);
  EXPECT_EQ(out.str(), "launched 4 kernels: matmul | float | 16 x2, softmax | float x1, matmul | half | 16 x1");
  std::ostringstream none;
  none << launch_counts{};
  EXPECT_EQ(none.str(), "launched nothing");
}

TEST(LaunchMatchers, LaunchedExactlyComparesTheTotal) {
  const auto counts = count_launches(block);
  EXPECT_THAT(counts, LaunchedExactly(4));
  EXPECT_THAT(counts, Not(LaunchedExactly(3)));
  EXPECT_THAT(explain(LaunchedExactly(3), counts), HasSubstr("launched 4 kernels: matmul"));
  EXPECT_THAT(::testing::DescribeMatcher<const launch_counts&>(LaunchedExactly(3)),
              HasSubstr("launched a number of kernels that is equal to 3"));
}

TEST(LaunchMatchers, LaunchedTotalTakesAMatcher) {
  EXPECT_THAT(count_launches(block), LaunchedTotal(Le(4)));
  EXPECT_THAT(count_launches(block), Not(LaunchedTotal(Le(3))));
}

TEST(LaunchMatchers, LaunchedNothingMatchesOnlyAnEmptyCount) {
  EXPECT_THAT(count_launches([] {}), LaunchedNothing());
  EXPECT_THAT(count_launches(block), Not(LaunchedNothing()));
}

TEST(LaunchMatchers, LaunchedKernelCountsOneKernelByAnyName) {
  const auto counts = count_launches(block);
  EXPECT_THAT(counts, LaunchedKernel("matmul", 3));
  EXPECT_THAT(counts, LaunchedKernel("matmul | half | 16", 1));
  EXPECT_THAT(counts, LaunchedKernel("softmax", Le(1)));
  EXPECT_THAT(counts, Not(LaunchedKernel("softmax", 2)));
  EXPECT_THAT(explain(LaunchedKernel("softmax", 2), counts), HasSubstr("`softmax` was launched 1 times"));
}

TEST(LaunchMatchers, NeverLaunchedFailsWhenTheKernelWasLaunched) {
  const auto counts = count_launches(block);
  EXPECT_THAT(counts, NeverLaunched("gelu"));
  EXPECT_THAT(counts, Not(NeverLaunched("softmax")));
}

TEST(LaunchMatchers, LaunchedKernelsMatchesTheWholeProfile) {
  const auto counts = count_launches(block);
  EXPECT_THAT(counts, LaunchedKernels({{"matmul", 3}, {"softmax", 1}}));
  EXPECT_THAT(counts, LaunchedKernels({{"matmul | float | 16", 2}, {"matmul | half | 16", 1}, {"softmax", 1}}));
}

TEST(LaunchMatchers, LaunchedKernelsNamesAWrongCount) {
  const auto counts = count_launches(block);
  EXPECT_THAT(explain(LaunchedKernels({{"matmul", 2}, {"softmax", 1}}), counts),
              HasSubstr("`matmul` was launched 3 times, not 2"));
}

TEST(LaunchMatchers, LaunchedKernelsNamesAKernelNotExpected) {
  const auto counts = count_launches(block);
  EXPECT_THAT(explain(LaunchedKernels({{"matmul", 3}}), counts),
              HasSubstr("`softmax` (demo::ops::softmax<float>) was launched 1 times and not expected"));
  EXPECT_THAT(::testing::DescribeMatcher<const launch_counts&>(LaunchedKernels({{"matmul", 3}})),
              HasSubstr("launched exactly matmul x3, and nothing else"));
}

}  // namespace
}  // namespace launchwatch
