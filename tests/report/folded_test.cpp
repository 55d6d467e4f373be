// Folded stacks against their golden file, and what the format must keep: the lines add up to the
// device window, and no name breaks a frame.

#include <launchwatch/report/folded.hpp>
#include <launchwatch/report/summary.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/golden.hpp"
#include "sample_passes.hpp"
#include "written_by.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using testing::lines_of;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::expect_matches_golden;

std::string folded(const pass_summary& s, folded_options options = {}) {
  std::ostringstream out;
  write_folded(out, s, options);
  return out.str();
}

TEST(FoldedStacks, MatchTheGoldenFile) {
  expect_matches_golden("flame.folded", folded(summarize(testing::sample_pass())));
}

TEST(FoldedStacks, AddUpToTheDeviceWindow) {
  for (std::uint32_t seed = 1; seed <= 100; ++seed) {
    const auto s = summarize(testing::random_pass(seed));
    if (s.device_overlap.count() > 0) continue;  // overlap has no frame: a flame graph cannot subtract
    std::int64_t sum = 0;
    for (const auto& line : lines_of(folded(s))) sum += std::stoll(line.substr(line.rfind(' ') + 1));
    ASSERT_EQ(sum, s.device_window.count()) << "seed " << seed;
  }
}

TEST(FoldedStacks, LeaveOutIdleTimeWhenAsked) {
  folded_options options;
  options.include_idle = false;
  EXPECT_THAT(folded(summarize(testing::sample_pass()), options), Not(HasSubstr("[device idle]")));
}

TEST(FoldedStacks, KeepNamesFromBreakingTheFormat) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  b.kernel({t, "k", {"a;b\nc"}, b.stream(1)}, 0us, 5us);
  EXPECT_EQ(folded(summarize(b.pass())), "a:b c;k 5000\n");
}

TEST(FoldedWriter, MatchesTheGoldenFile) {
  folded_writer writer;
  expect_matches_golden("flame.folded",
                        testing::written_by(writer, summarize(testing::sample_pass())));
}

}  // namespace
}  // namespace launchwatch
