// The rules every launchwatch table follows (core/interface/text_table.hpp): units, rounding, shares that add up,
// column layout.

#include "core/interface/text_table.hpp"

#include <chrono>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace launchwatch::detail {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;

std::int64_t sum(const std::vector<std::int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), std::int64_t{0});
}

TEST(ReportTable, ApportionedSharesAddUpToExactlyTheWhole) {
  std::mt19937 random{7};
  for (int round = 0; round < 1000; ++round) {
    std::vector<std::int64_t> parts(std::uniform_int_distribution<std::size_t>{1, 12}(random));
    for (auto& part : parts) part = std::uniform_int_distribution<std::int64_t>{0, 1'000'000}(random);
    if (sum(parts) == 0) continue;
    ASSERT_EQ(sum(apportion(parts, whole_share)), whole_share) << "round " << round;
  }
}

TEST(ReportTable, ApportionGivesTheLeftoverToTheLargestRemainders) {
  // Exact shares 33.3..%, 33.3..%, 33.3..%: the first of the tied remainders takes the tenth.
  EXPECT_THAT(apportion({1, 1, 1}, whole_share), ElementsAre(334, 333, 333));
  // 2/7 = 285.71, 5/7 = 714.29: the larger remainder is the first part's.
  EXPECT_THAT(apportion({2, 5}, whole_share), ElementsAre(286, 714));
}

TEST(ReportTable, ApportionTakesASubtractedRowIntoAccount) {
  // Rows of 16 and an overlap of -4 make a total of 12: 133.3% and -33.3%.
  EXPECT_THAT(apportion({16, -4}, whole_share), ElementsAre(1333, -333));
}

TEST(ReportTable, ApportionGivesNothingWhenThePartsAddUpToNothing) {
  EXPECT_THAT(apportion({0, 0}, whole_share), ElementsAre(0, 0));
}

TEST(ReportTable, ApportionIsExactForTheLargestTimes) {
  const std::int64_t huge = INT64_MAX / 2;
  EXPECT_THAT(apportion({huge, huge}, whole_share), ElementsAre(500, 500));
}

TEST(ReportTable, WritesEachTimeInTheUnitThatShowsThreeSignificantFigures) {
  EXPECT_EQ(format_time(850ns), "850 ns");
  EXPECT_EQ(format_time(1'234ns), "1.23 us");
  EXPECT_EQ(format_time(12'345ns), "12.3 us");
  EXPECT_EQ(format_time(412us), "412 us");
  EXPECT_EQ(format_time(1'234'567ns), "1.23 ms");
  EXPECT_EQ(format_time(12'300ms), "12.3 s");
  EXPECT_EQ(format_time(0ns), "0 ns");
}

TEST(ReportTable, KeepsASmallTimeReadableWhateverTheWindow) {
  // The row of a 100 s window that one unit per table once printed as `0.000 s`.
  EXPECT_EQ(format_time(412us), "412 us");
  EXPECT_EQ(format_time(100s), "100 s");
}

TEST(ReportTable, RoundsTimesToTheNearestLastDigitHalfAwayFromZero) {
  EXPECT_EQ(format_time(1'235ns), "1.24 us");
  EXPECT_EQ(format_time(1'234ns), "1.23 us");
  EXPECT_EQ(format_time(-1'235ns), "-1.24 us");
  EXPECT_EQ(format_time(-30us), "-30.0 us");
}

TEST(ReportTable, MovesToTheNextUnitWhenRoundingReachesAThousand) {
  EXPECT_EQ(format_time(999'600ns), "1.00 ms");
  EXPECT_EQ(format_time(9'995ns), "10.0 us");
  EXPECT_EQ(format_time(999'999'999ns), "1.00 s");
}

TEST(ReportTable, WritesWholeSecondsPastAThousandSeconds) {
  EXPECT_EQ(format_time(12'345s), "12345 s");
}

TEST(ReportTable, WritesSharesWithOneDecimal) {
  EXPECT_EQ(format_share(1000), "100.0%");
  EXPECT_EQ(format_share(7), "0.7%");
  EXPECT_EQ(format_share(-333), "-33.3%");
}

TEST(ReportTable, AlignsTheFirstColumnLeftAndTheOthersAsAsked) {
  EXPECT_THAT(lay_out_table({{"name", "n", "how"}, {"a", "10", "x"}, {"long name", "2", "device"}},
                            {column_align::left, column_align::right, column_align::left}),
              ElementsAre("name        n  how", "a          10  x", "long name   2  device"));
}

}  // namespace
}  // namespace launchwatch::detail
