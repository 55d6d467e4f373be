// An aggregate-only attribution's trace prefix (attribution_options::trace_prefix_events,
// collect_bounded) and its summary of the pass so far (snapshot_summary).

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/report/chrome_trace.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_clock.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing::fake_clock;

constexpr std::array<std::string_view, 3> step_kernels{"demo::ops::matmul<float, 16>",
                                                       "demo::ops::softmax<float>", "demo::copy"};

/// `steps` steps from fake time `from`, each a scope `step` around one launch (its measurement on
/// the fake clock, every fifth untimed), all inside a scope `model`; launch i is issued at
/// from + 300 ns * i. On two streams, so the summary has something to unite.
void run_steps(const std::shared_ptr<attribution>& observer, int steps,
               std::chrono::nanoseconds from = 0ns) {
  launch_observation watching{observer};
  auto now = from;
  fake_clock::set(now);
  scope model{"model"};
  for (int i = 0; i < steps; ++i) {
    fake_clock::set(now);
    scope step{"step"};
    launch_info info;
    info.kernel = step_kernels[static_cast<std::size_t>(i) % step_kernels.size()];
    info.backend = "cpu";
    info.stream = 1 + static_cast<std::uint64_t>(i % 2);
    launch_path::notify_launch(info);
    if (i % 5 != 4) {
      const auto start = now + 50ns;
      const auto end = start + std::chrono::nanoseconds{100 + 10 * (i % 4)};
      fake_clock::set(now + 20ns);
      launch_path::notify_profiled(info.kernel, profile_duration{[=]() -> std::optional<profile_ticks> {
                                     return profile_ticks::from_start_end(fake_clock::at(start),
                                                                          fake_clock::at(end));
                                   },
                                   timing_method::device});
    }
    fake_clock::set(now + 250ns);
    now += 300ns;
  }
  fake_clock::set(now);
}

std::shared_ptr<attribution> make_attribution(bool aggregate_only, std::size_t prefix_events = 0) {
  attribution_options options;
  options.clock = &fake_clock::now;
  options.aggregate_only = aggregate_only;
  options.trace_prefix_events = prefix_events;
  fake_clock::set(0ns);
  return std::make_shared<attribution>(options);
}

// A step is a launch (4 events of room) and its scope's interval (1): 50 events are 10 steps.
constexpr std::size_t ten_steps = 10 * (4 + 1);

TEST(TracePrefix, HoldsExactlyTheFirstLaunchesThatFitAndTheScopesOfThatStretch) {
  const auto observer = make_attribution(true, ten_steps);
  run_steps(observer, 100);
  const auto got = observer->collect_bounded();
  const auto& prefix = got.trace_prefix;
  ASSERT_EQ(prefix.launches.size(), 10u);
  for (std::size_t i = 0; i < prefix.launches.size(); ++i) {
    const auto& launch = prefix.launches[i];
    EXPECT_EQ(launch.issued, fake_clock::at(std::chrono::nanoseconds{300 * static_cast<long>(i)})) << i;
    EXPECT_EQ(prefix.kernels.at(launch.kernel), step_kernels[i % step_kernels.size()]) << i;
    ASSERT_TRUE(launch.scope.has_value());
    EXPECT_EQ(prefix.scope_path_text(*launch.scope), "model/step");
    EXPECT_EQ(launch.timing.has_value(), i % 5 != 4) << i;
  }
  // The ten steps' scopes, then the two open when the prefix filled (at the 11th launch): that
  // step and `model`.
  ASSERT_EQ(prefix.threads.size(), 1u);
  const auto& scopes = prefix.threads[0].scopes;
  ASSERT_EQ(scopes.size(), 12u);
  for (std::size_t i = 0; i < 11; ++i) {
    EXPECT_EQ(prefix.scope_path_text(scopes[i].scope), "model/step");
    EXPECT_EQ(scopes[i].start, fake_clock::at(std::chrono::nanoseconds{300 * static_cast<long>(i)})) << i;
  }
  EXPECT_EQ(prefix.scope_path_text(scopes[11].scope), "model");
  // Every launch is in the summary.
  EXPECT_EQ(got.summary.launches, 100u);
}

TEST(TracePrefix, CountsTheLaunchesAndScopeIntervalsItLeftOutAndWhereItEnded) {
  const auto observer = make_attribution(true, ten_steps);
  run_steps(observer, 100);
  const auto got = observer->collect_bounded();
  EXPECT_EQ(got.left_out.launches, 90u);
  // 100 step intervals and `model`: 10 fitted, 2 were open when it filled.
  EXPECT_EQ(got.left_out.scope_intervals, 89u);
  ASSERT_TRUE(got.left_out.from.has_value());
  EXPECT_EQ(*got.left_out.from, 3000ns);  // the 11th launch, the first that did not fit
}

TEST(TracePrefix, LeavesTheSummaryEqualToAFullAttributionsAndItsLaunchesToTheFullRecords) {
  // Enough launches for several folds, and a pass that does not end on a fold.
  constexpr int steps = 3 * 4096 + 77;
  const auto full = make_attribution(false);
  run_steps(full, steps);
  const auto record = full->collect();
  const auto bounded = make_attribution(true, 1000 * 5);
  run_steps(bounded, steps);
  const auto got = bounded->collect_bounded();
  EXPECT_EQ(got.summary, summarize(record));
  ASSERT_EQ(got.trace_prefix.launches.size(), 1000u);
  for (std::size_t i = 0; i < 1000; ++i) {
    const auto& kept = got.trace_prefix.launches[i];
    const auto& whole = record.launches[i];
    EXPECT_EQ(got.trace_prefix.kernels.at(kept.kernel), record.kernels.at(whole.kernel)) << i;
    EXPECT_EQ(got.trace_prefix.scope_path_text(*kept.scope), record.scope_path_text(*whole.scope)) << i;
    EXPECT_EQ(got.trace_prefix.streams.at(kept.stream), record.streams.at(whole.stream)) << i;
    EXPECT_EQ(kept.issued, whole.issued) << i;
    EXPECT_EQ(kept.returned, whole.returned) << i;
    EXPECT_EQ(kept.timing, whole.timing) << i;
  }
  EXPECT_EQ(got.left_out.launches, static_cast<std::size_t>(steps) - 1000u);
}

TEST(TracePrefix, ThatNeverFillsIsTheWholePassAsCollectGivesIt) {
  constexpr int steps = 4096 + 5;
  const auto full = make_attribution(false);
  run_steps(full, steps);
  const auto record = full->collect();
  const auto bounded = make_attribution(true, unlimited_trace_prefix);
  run_steps(bounded, steps);
  const auto got = bounded->collect_bounded();
  EXPECT_FALSE(got.left_out.any());
  EXPECT_FALSE(got.left_out.from.has_value());
  EXPECT_EQ(got.trace_prefix, record);
}

TEST(TracePrefix, IsEmptyWhenNoneWasAskedFor) {
  const auto observer = make_attribution(true);
  run_steps(observer, 20);
  const auto got = observer->collect_bounded();
  EXPECT_TRUE(got.trace_prefix.launches.empty());
  EXPECT_TRUE(got.trace_prefix.threads.empty());
  EXPECT_EQ(got.left_out.launches, 20u);
  EXPECT_EQ(got.summary.launches, 20u);
}

TEST(TracePrefix, StartsAgainWithEachCollect) {
  const auto observer = make_attribution(true, ten_steps);
  run_steps(observer, 30);
  (void)observer->collect_summary();
  run_steps(observer, 30, 1ms);
  const auto got = observer->collect_bounded();
  EXPECT_EQ(got.trace_prefix.launches.size(), 10u);
  EXPECT_EQ(got.trace_prefix.launches.front().issued, fake_clock::at(1ms));
  EXPECT_EQ(got.left_out.launches, 20u);
  EXPECT_EQ(got.summary.launches, 30u);
}

TEST(TracePrefix, OnceFullLetsAScopeEnterAndLeaveWithoutReadingTheClock) {
  attribution_options options;
  options.clock = &fake_clock::counted_now;
  options.aggregate_only = true;
  options.trace_prefix_events = 5;  // the first launch fills it
  fake_clock::set(0ns);
  const auto observer = std::make_shared<attribution>(options);
  launch_observation watching{observer};
  launch_info info;
  info.kernel = "k";
  launch_path::notify_launch(info);
  launch_path::notify_launch(info);  // finds it full
  fake_clock::set(1us);
  const long before = fake_clock::reads.load();
  for (int i = 0; i < 100; ++i) {
    scope outer{"outer"};
    scope inner{"inner"};
  }
  EXPECT_EQ(fake_clock::reads.load() - before, 0);
  const auto got = observer->collect_bounded();
  EXPECT_EQ(got.left_out.scope_intervals, 200u);
  EXPECT_TRUE(got.trace_prefix.threads.empty() || got.trace_prefix.threads[0].scopes.empty());
}

TEST(TracePrefix, KeepsAScopeEnteredWhileItWasFullFromTheNextPassesOriginWhenItEndsThere) {
  const auto observer = make_attribution(true, ten_steps);
  launch_observation watching{observer};
  run_steps(observer, 30);  // fills it
  fake_clock::set(20us);
  std::optional<scope> open{std::in_place, "epoch"};  // entered with no room: its start unread
  fake_clock::set(30us);
  (void)observer->collect_summary();  // the next pass begins at 30 us, with room again
  fake_clock::set(40us);
  open.reset();
  const auto got = observer->collect_bounded();
  ASSERT_EQ(got.trace_prefix.threads.size(), 1u);
  const auto& scopes = got.trace_prefix.threads[0].scopes;
  ASSERT_EQ(scopes.size(), 1u);
  EXPECT_EQ(got.trace_prefix.scope_path_text(scopes[0].scope), "epoch");
  EXPECT_EQ(scopes[0].start, fake_clock::at(30us));
  EXPECT_EQ(scopes[0].end, fake_clock::at(40us));
  EXPECT_EQ(got.left_out.scope_intervals, 0u);
}

TEST(TracePrefix, OfAFullAttributionIsItsWholeRecord) {
  const auto full = make_attribution(false, ten_steps);
  run_steps(full, 30);
  const auto got = full->collect_bounded();
  EXPECT_EQ(got.trace_prefix.launches.size(), 30u);
  EXPECT_EQ(got.summary, summarize(got.trace_prefix));
  EXPECT_FALSE(got.left_out.any());
}

TEST(SnapshotSummary, SummarisesThePassSoFarWithoutStartingTheNextOne) {
  const auto full = make_attribution(false);
  run_steps(full, 5000);
  const auto first_part = summarize(full->collect());

  const auto observer = make_attribution(true, ten_steps);
  run_steps(observer, 5000);
  EXPECT_EQ(observer->snapshot_summary(), first_part);
  // Taken twice, it gives the same again: nothing was emptied.
  EXPECT_EQ(observer->snapshot_summary(), first_part);
}

TEST(SnapshotSummary, LeavesEverythingToTheCollectThatFollows) {
  const auto full = make_attribution(false);
  run_steps(full, 5000);
  run_steps(full, 300, 5ms);
  const auto whole = summarize(full->collect());

  const auto observer = make_attribution(true, ten_steps);
  run_steps(observer, 5000);
  (void)observer->snapshot_summary();
  run_steps(observer, 300, 5ms);
  EXPECT_EQ(observer->snapshot_summary().launches, 5300u);
  const auto got = observer->collect_bounded();
  EXPECT_EQ(got.summary, whole);
  EXPECT_EQ(got.trace_prefix.launches.size(), 10u);
  EXPECT_EQ(got.left_out.launches, 5290u);
}

TEST(SnapshotSummary, IsRefusedByAFullAttribution) {
  const auto full = make_attribution(false);
  EXPECT_THROW((void)full->snapshot_summary(), std::logic_error);
}

/// The trace of `steps` steps' prefix (`prefix_events`), told what the prefix left out.
std::string trace_of(int steps, std::size_t prefix_events, trace_stats* stats = nullptr,
                     prefix_left_out* left_out = nullptr) {
  const auto observer = make_attribution(true, prefix_events);
  run_steps(observer, steps);
  const auto got = observer->collect_bounded();
  trace_options options;
  options.beyond_prefix = got.left_out;
  std::ostringstream out;
  const auto written = write_chrome_trace(out, got.trace_prefix, options);
  if (stats != nullptr) *stats = written;
  if (left_out != nullptr) *left_out = got.left_out;
  return out.str();
}

TEST(ChromeTrace, SaysWhatTheTracePrefixLeftOutInItsMetadataAndHostName) {
  trace_stats stats;
  prefix_left_out left_out;
  const auto text = trace_of(100, ten_steps, &stats, &left_out);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.beyond_prefix, left_out);
  EXPECT_THAT(text, HasSubstr(R"("launches_beyond_prefix":90,"scope_intervals_beyond_prefix":89,"prefix_ends_us":3.000)"));
  EXPECT_THAT(text, HasSubstr("90 later launches and 89 scope intervals only in the summary"));
  // On a line of its own among the first: a reader finds it without parsing the trace.
  std::istringstream lines{text};
  std::string line;
  bool found = false;
  for (int i = 0; i < 8 && std::getline(lines, line); ++i) {
    if (line.find("launchwatch_dropped_events") != std::string::npos) {
      found = true;
      EXPECT_THAT(line, HasSubstr(R"("events":)"));
    }
  }
  EXPECT_TRUE(found) << text.substr(0, 800);
}

TEST(ChromeTrace, SaysNothingOfAPrefixWhenTheWholePassIsThere) {
  EXPECT_THAT(trace_of(10, unlimited_trace_prefix), ::testing::Not(HasSubstr("launchwatch_dropped_events")));
}

}  // namespace
}  // namespace launchwatch
