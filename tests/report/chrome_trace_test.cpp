// The Chrome trace against its golden file and the Chrome trace rules: nesting tracks, arrows
// from launches to kernels, and a cap that cuts the trace and says what it dropped.

#include <launchwatch/report/chrome_trace.hpp>
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
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/golden.hpp"
#include "sample_passes.hpp"
#include "written_by.hpp"
#include "trace_rules.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::expect_matches_golden;

std::string trace(const pass_record& pass) {
  std::ostringstream out;
  write_chrome_trace(out, pass);
  return out.str();
}

TEST(ChromeTrace, MatchesTheGoldenFile) {
  expect_matches_golden("trace.json", trace(testing::sample_pass()));
}

TEST(ChromeTrace, FollowsTheChromeTraceRules) {
  EXPECT_THAT(testing::chrome_trace_violations(trace(testing::sample_pass())), IsEmpty());
  EXPECT_THAT(testing::chrome_trace_violations(trace(testing::mixed_pass())), IsEmpty());
  EXPECT_THAT(testing::chrome_trace_violations(trace(testing::untimed_pass())), IsEmpty());
}

TEST(ChromeTrace, FollowsTheChromeTraceRulesForAnyPass) {
  for (std::uint32_t seed = 1; seed <= 200; ++seed) {
    ASSERT_THAT(testing::chrome_trace_violations(trace(testing::random_pass(seed))), IsEmpty())
        << "seed " << seed;
  }
}

TEST(ChromeTrace, DrawsAnArrowFromEachLaunchToItsKernel) {
  const auto pass = testing::sample_pass();
  const auto events = nlohmann::json::parse(trace(pass))["traceEvents"];
  std::size_t placed = 0;
  for (const auto& l : pass.launches) {
    placed += (l.timing && l.timing->ticks && !l.dry_run && l.returned > l.issued &&
               l.timing->length.count() > 0)
                  ? 1
                  : 0;
  }
  std::size_t starts = 0;
  std::size_t finishes = 0;
  for (const auto& e : events) {
    if (e["ph"] == "s") {
      ++starts;
      EXPECT_EQ(e["pid"], 1) << "an arrow starts on the host";
    }
    if (e["ph"] == "f") {
      ++finishes;
      EXPECT_NE(e["pid"], 1) << "an arrow ends on a device";
    }
  }
  EXPECT_EQ(placed, 12u);
  EXPECT_EQ(starts, placed);
  EXPECT_EQ(finishes, placed);
}

TEST(ChromeTrace, PutsEachStreamOnItsOwnTrack) {
  const auto events = nlohmann::json::parse(trace(testing::sample_pass()))["traceEvents"];
  std::vector<std::string> tracks;
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] != 1) {
      tracks.push_back(e["args"]["name"].get<std::string>());
    }
  }
  EXPECT_THAT(tracks, ::testing::ElementsAre("stream 1", "stream 2"));
}

TEST(ChromeTrace, PutsAKernelThatOverlapsAnotherOnAnOverlapTrack) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  b.kernel({t, "a", {}, s1}, 0us, 10us);
  b.kernel({t, "b", {}, s1, 1us, 2us}, 6us, 12us);
  const auto text = trace(b.pass());
  EXPECT_THAT(testing::chrome_trace_violations(text), IsEmpty());
  EXPECT_THAT(text, HasSubstr("\"stream 1 (overlap 1)\""));
}

TEST(ChromeTrace, DrawsNoArrowToAKernelOfZeroLength) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  b.kernel({t, "k", {}, b.stream(1), 0us, 2us}, 5us, 5us);
  const auto text = trace(b.pass());
  EXPECT_THAT(testing::chrome_trace_violations(text), IsEmpty());
  EXPECT_THAT(text, Not(HasSubstr(R"("ph":"f")")));
  EXPECT_THAT(text, HasSubstr(R"("cat":"kernel")"));
}

TEST(ChromeTrace, WritesTimesAsExactMicroseconds) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  b.kernel({t, "k", {}, b.stream(1)}, 1234567ns, 1234568ns);
  EXPECT_THAT(trace(b.pass()), HasSubstr(R"("ts":1234.567,"dur":0.001)"));
}

std::size_t non_metadata_events(const std::string& text) {
  const auto root = nlohmann::json::parse(text);
  std::size_t n = 0;
  for (const auto& e : root["traceEvents"]) n += e["ph"] != "M" ? 1 : 0;
  return n;
}

TEST(ChromeTrace, SaysItWroteEveryEventWhenNotCapped) {
  std::ostringstream out;
  const auto stats = write_chrome_trace(out, testing::sample_pass());
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.events, non_metadata_events(out.str()));
  EXPECT_THAT(out.str(), Not(HasSubstr("launchwatch_dropped_events")));
}

TEST(ChromeTrace, StopsAtTheCapAndSaysWhatItDropped) {
  trace_options options;
  options.max_events = 10;
  std::ostringstream full;
  const auto all = write_chrome_trace(full, testing::sample_pass());
  std::ostringstream out;
  const auto stats = write_chrome_trace(out, testing::sample_pass(), options);
  EXPECT_LE(stats.events, 10u);
  EXPECT_GT(stats.dropped, 0u);
  EXPECT_EQ(stats.events + stats.dropped, all.events);
  EXPECT_EQ(stats.events, non_metadata_events(out.str()));
  EXPECT_THAT(out.str(), HasSubstr(fmt::format("\"name\":\"host (trace cut at 10 events: {} later "
                                               "events dropped)\"", stats.dropped)));
  EXPECT_THAT(out.str(), HasSubstr(fmt::format("\"dropped_events\":{}", stats.dropped)));
  // Everything written starts before the cut, and nothing later is there.
  const auto root = nlohmann::json::parse(out.str());
  for (const auto& e : root["traceEvents"]) {
    if (e["ph"] != "M") {
      EXPECT_LT(std::llround(e["ts"].get<double>() * 1000), stats.dropped_from.count()) << e.dump();
    }
  }
  EXPECT_THAT(testing::chrome_trace_violations(out.str()), IsEmpty());
}

TEST(ChromeTrace, ACappedTraceKeepsTheChromeTraceRulesForAnyPass) {
  for (std::uint32_t seed = 1; seed <= 100; ++seed) {
    trace_options options;
    options.max_events = 1 + seed % 37;
    std::ostringstream out;
    write_chrome_trace(out, testing::random_pass(seed), options);
    ASSERT_THAT(testing::chrome_trace_violations(out.str()), IsEmpty()) << "seed " << seed;
  }
}

TEST(ChromeTraceWriter, MatchesTheGoldenFile) {
  chrome_trace_writer writer;
  expect_matches_golden("trace.json", testing::written_by(writer, testing::sample_pass()));
}

TEST(ChromeTraceWriter, KeepsWhatItsLastWriteWrote) {
  trace_options options;
  options.max_events = 10;
  chrome_trace_writer writer{options};
  EXPECT_EQ(writer.stats().events, 0u);
  std::ostringstream out;
  writer.write(out, testing::sample_pass());
  std::ostringstream again;
  const auto stats = write_chrome_trace(again, testing::sample_pass(), options);
  EXPECT_EQ(writer.stats().events, stats.events);
  EXPECT_EQ(writer.stats().dropped, stats.dropped);
  EXPECT_GT(writer.stats().dropped, 0u);
  EXPECT_EQ(writer.stats().dropped_from, stats.dropped_from);
}

}  // namespace
}  // namespace launchwatch
