// The summary accounts for the whole device window: rows, idle time and overlap add up to it,
// exactly, for hand-built passes and for random ones.

#include <launchwatch/report/summary.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/summary_builder.hpp"
#include "sample_passes.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using testing::pass_builder;

std::chrono::nanoseconds rows_total(const pass_summary& s) {
  std::chrono::nanoseconds total = s.outside.total;
  for (const auto& scope : s.scopes) total += scope.total;
  return total;
}

const summary_node& top(const pass_summary& s, std::string_view name) {
  for (const auto& scope : s.scopes) {
    if (scope.name == name) return scope;
  }
  throw std::out_of_range{"no top-level scope " + std::string{name}};
}

std::vector<std::string> names_of(const std::vector<summary_node>& rows) {
  std::vector<std::string> names;
  for (const auto& row : rows) names.push_back(row.name);
  return names;
}

const summary_node& child(const summary_node& node, std::string_view name) {
  for (const auto& c : node.children) {
    if (c.name == name) return c;
  }
  throw std::out_of_range{"no child " + std::string{name}};
}

TEST(Summary, RowsIdleAndOverlapAddUpToTheDeviceWindow) {
  const auto s = summarize(testing::sample_pass());
  // stream 1: 100us..1000us; stream 2: 10us..130us
  EXPECT_EQ(s.window, 900us + 120us);
  EXPECT_EQ(rows_total(s) + s.idle - s.overlap, s.window);
  EXPECT_EQ(s.overlap, 0ns);
}

TEST(Summary, IdleIsTheWindowThatNoKernelCovered) {
  pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  b.kernel({t, "a", {}, s1}, 0us, 10us);
  b.kernel({t, "b", {}, s1}, 15us, 20us);  // 5us gap
  b.kernel({t, "c", {}, s1}, 30us, 31us);  // 10us gap
  const auto s = summarize(b.pass());
  EXPECT_EQ(s.window, 31us);
  EXPECT_EQ(s.kernel_time, 16us);
  EXPECT_EQ(s.idle, 15us);
  ASSERT_EQ(s.streams.size(), 1u);
  EXPECT_EQ(s.streams[0].idle, 15us);
}

TEST(Summary, KernelsOverlappingOnOneStreamAreSubtractedOnce) {
  pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  b.kernel({t, "a", {}, s1}, 0us, 10us);
  b.kernel({t, "b", {}, s1}, 6us, 12us);  // 4us under a
  const auto s = summarize(b.pass());
  EXPECT_EQ(s.window, 12us);
  EXPECT_EQ(s.kernel_time, 16us);
  EXPECT_EQ(s.overlap, 4us);
  EXPECT_EQ(s.idle, 0us);
  EXPECT_EQ(rows_total(s) + s.idle - s.overlap, s.window);
}

TEST(Summary, EachStreamHasItsOwnWindow) {
  pass_builder b;
  const auto t = b.thread("t");
  b.kernel({t, "a", {}, b.stream(1)}, 0us, 10us);
  b.kernel({t, "b", {}, b.stream(2)}, 100us, 105us);
  const auto s = summarize(b.pass());
  EXPECT_EQ(s.window, 15us) << "the gap between two streams' work is not one stream's idle time";
  EXPECT_EQ(s.idle, 0us);
}

TEST(Summary, DryRunLaunchesAreCountedButGivenNoTime) {
  pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  b.kernel({t, "k", {"s"}, s1}, 0us, 10us).dry_run = true;
  b.kernel({t, "k", {"s"}, s1}, 20us, 25us);
  const auto s = summarize(b.pass());
  EXPECT_EQ(s.launches, 2u);
  EXPECT_EQ(s.dry_run_launches, 1u);
  EXPECT_EQ(s.timed_launches, 1u);
  EXPECT_EQ(s.window, 5us);
  EXPECT_EQ(s.scopes.at(0).launches, 2u);
  EXPECT_EQ(s.scopes.at(0).total, 5us);
}

TEST(Summary, CountsDryRunsInEveryRowAboveThem) {
  const auto s = summarize(testing::sample_pass());
  EXPECT_EQ(s.outside.dry_run_launches, 1u);
  EXPECT_EQ(child(s.outside, testing::matmul).dry_run_launches, 1u);
  EXPECT_EQ(child(s.outside, testing::copy).dry_run_launches, 0u);
  EXPECT_EQ(top(s, "model").dry_run_launches, 0u);

  pass_builder b;
  const auto t = b.thread("t");
  b.launch({t, "k", {"outer", "inner"}, b.stream(1)}).dry_run = true;
  const auto nested = summarize(b.pass());
  EXPECT_EQ(nested.scopes.at(0).dry_run_launches, 1u);
  EXPECT_EQ(child(nested.scopes.at(0), "inner").dry_run_launches, 1u);
}

TEST(Summary, CountsHowEachTimedLaunchWasMeasured) {
  pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  b.kernel({t, "a", {}, s1}, 0us, 10us);
  b.kernel({t, "a", {}, s1}, 10us, 20us);
  b.kernel({t, "b", {}, s1}, 20us, 30us, timing_method::system);
  b.timed({t, "c", {}, s1}, 5us, timing_method::device);
  b.timed({t, "d", {}, s1}, 5us, timing_method::system);
  b.timed({t, "d", {}, s1}, 5us, timing_method::system);
  b.timed({t, "d", {}, s1}, 5us, timing_method::system).dry_run = true;  // not timed: nothing ran
  const auto s = summarize(b.pass());
  EXPECT_EQ(s.measurements, (measurement_kinds{2, 1, 1, 2}));
}

TEST(Summary, SelfIsTheScopesOwnKernelsAndTotalIncludesItsChildren) {
  const auto s = summarize(testing::sample_pass());
  ASSERT_EQ(s.scopes.size(), 2u);
  const auto& model = top(s, "model");
  const auto& layer0 = child(model, "layer 0");
  EXPECT_EQ(layer0.self, 10us);  // layer_norm, launched directly in it
  EXPECT_EQ(layer0.total, 10us + (60us + 20us + 60us) + (60us + 20us + 60us));
  EXPECT_EQ(child(layer0, "attention").total, 140us);
  EXPECT_EQ(child(child(layer0, "attention"), testing::matmul).total, 120us);
  EXPECT_EQ(child(child(layer0, "attention"), testing::matmul).launches, 2u);
  EXPECT_EQ(model.self, 0us);
  EXPECT_EQ(model.total, layer0.total + child(model, "layer 1").total);
  EXPECT_EQ(model.launches, 9u);
}

TEST(Summary, LaunchesOutsideAnyScopeHaveTheirOwnRow) {
  const auto s = summarize(testing::sample_pass());
  EXPECT_EQ(s.outside.launches, 2u);  // copy, and the dry-run matmul
  EXPECT_EQ(s.outside.total, 40us);
  EXPECT_EQ(s.outside.children.size(), 2u);
}

TEST(Summary, RowsAreInTheOrderTheirFirstLaunchWasIssued) {
  const auto s = summarize(testing::sample_pass());
  // The loader thread launched at 5us, before the model's first launch at 30us.
  EXPECT_THAT(names_of(s.scopes), ::testing::ElementsAre("loader", "model"));
  const auto& layer0 = child(top(s, "model"), "layer 0");
  EXPECT_THAT(names_of(layer0.children),
              ::testing::ElementsAre("attention", "mlp", std::string{testing::layer_norm}));
  // The dry-run matmul at 310us came before the copy at 950us.
  EXPECT_THAT(names_of(s.outside.children),
              ::testing::ElementsAre(std::string{testing::matmul}, std::string{testing::copy}));
}

TEST(Summary, AScopeIsPlacedByTheFirstLaunchAnywhereUnderIt) {
  pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  b.kernel({t, "a", {"late"}, s1, 5us, 5us}, 5us, 6us);
  b.kernel({t, "b", {"early", "inner"}, s1, 1us, 1us}, 1us, 2us);
  b.kernel({t, "c", {"early"}, s1, 9us, 9us}, 9us, 10us);
  auto& pass = b.pass();
  std::stable_sort(pass.launches.begin(), pass.launches.end(),
                   [](const launch_record& x, const launch_record& y) { return x.issued < y.issued; });
  const auto s = summarize(pass);
  EXPECT_THAT(names_of(s.scopes), ::testing::ElementsAre("early", "late"));
  EXPECT_THAT(names_of(top(s, "early").children), ::testing::ElementsAre("inner", "c"));
}

TEST(Summary, TheLargestRowComesFirstOnlyWhenItWasIssuedFirst) {
  pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  for (int layer = 0; layer < 4; ++layer) {
    const std::string name = "layer " + std::to_string(layer);
    const auto length = std::chrono::microseconds{layer == 2 ? 50 : 10};
    const auto start = std::chrono::microseconds{100 * layer};
    b.kernel({t, "k", {name}, s1, start, start}, start, start + length);
  }
  EXPECT_THAT(names_of(summarize(b.pass()).scopes),
              ::testing::ElementsAre("layer 0", "layer 1", "layer 2", "layer 3"));
}

TEST(Summary, DeviceIdleIsTimeNoStreamOfTheDeviceRan) {
  pass_builder b;
  const auto t = b.thread("t");
  const auto s1 = b.stream(1);
  const auto s2 = b.stream(2);
  // Stream 1 runs 0..10 and 20..30; stream 2 runs 8..22 meanwhile: the device never waits.
  b.kernel({t, "a", {}, s1}, 0us, 10us);
  b.kernel({t, "b", {}, s2}, 8us, 22us);
  b.kernel({t, "c", {}, s1}, 20us, 30us);
  const auto s = summarize(b.pass());
  EXPECT_EQ(s.idle, 10us) << "stream 1 waited 10us while stream 2 ran";
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].streams, 2u);
  EXPECT_EQ(s.devices[0].window, 30us);
  EXPECT_EQ(s.devices[0].idle, 0us);
  EXPECT_EQ(s.devices[0].overlap, 4us);  // 8..10 and 20..22
  EXPECT_EQ(s.device_idle, 0us);
  EXPECT_EQ(s.device_window, 30us);
}

TEST(Summary, EachDeviceHasItsOwnWindow) {
  pass_builder b;
  const auto t = b.thread("t");
  b.kernel({t, "a", {}, b.stream(1, "cuda", 0)}, 0us, 10us);
  b.kernel({t, "b", {}, b.stream(2, "cuda", 1)}, 100us, 105us);
  const auto s = summarize(b.pass());
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.device_window, 15us) << "the gap between two devices' work is neither's idle time";
  EXPECT_EQ(s.device_idle, 0us);
}

TEST(Summary, ALengthWithoutTimestampsIsInTheWindowButNotPlaced) {
  const auto s = summarize(testing::mixed_pass());
  EXPECT_EQ(s.unplaced, 8us);
  // placed: 2us..45us on one stream, 10 + 2 + 4 covered
  EXPECT_EQ(s.window, 43us + 8us);
  EXPECT_EQ(s.idle, 43us - 16us);
  EXPECT_TRUE(s.methods.mixed());
  EXPECT_EQ(rows_total(s) + s.idle - s.overlap, s.window);
}

TEST(Summary, ScopesThatLaunchedNothingAreLeftOut) {
  pass_builder b;
  const auto t = b.thread("t");
  b.scope(t, {"idle host work"}, 0us, 10us);
  b.kernel({t, "k", {"busy"}, b.stream(1), 11us, 12us}, 12us, 13us);
  b.scope(t, {"busy"}, 11us, 14us);
  const auto s = summarize(b.pass());
  ASSERT_EQ(s.scopes.size(), 1u);
  EXPECT_EQ(s.scopes[0].name, "busy");
}

TEST(Summary, AnUntimedPassCountsButHasNoWindow) {
  const auto s = summarize(testing::untimed_pass());
  EXPECT_EQ(s.launches, 5u);
  EXPECT_EQ(s.timed_launches, 0u);
  EXPECT_EQ(s.window, 0ns);
  EXPECT_EQ(s.scopes.at(0).launches, 4u);
  EXPECT_FALSE(s.methods.any());
}

TEST(Summary, RejectsAScopeWhoseParentComesAfterIt) {
  pass_record pass;
  pass.scopes.push_back(scope_info{"child", 1});
  pass.scopes.push_back(scope_info{"parent", std::nullopt});
  EXPECT_THROW((void)summarize(pass), std::invalid_argument);
}

// The property behind "accounts for 100%": over many shapes of pass (overlaps, gaps, dry runs,
// lengths without timestamps, several streams and threads), the identity holds exactly.
TEST(Summary, AccountsForTheWholeWindowOfAnyPass) {
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    const auto pass = testing::random_pass(seed);
    const auto s = summarize(pass);
    ASSERT_EQ(rows_total(s), s.kernel_time) << "seed " << seed;
    ASSERT_EQ(rows_total(s) + s.idle - s.overlap, s.window) << "seed " << seed;
    ASSERT_GE(s.idle.count(), 0) << "seed " << seed;
    ASSERT_GE(s.overlap.count(), 0) << "seed " << seed;
    std::size_t launches = s.outside.launches;
    for (const auto& scope : s.scopes) launches += scope.launches;
    ASSERT_EQ(launches, pass.launches.size()) << "seed " << seed;
    for (const auto& stream : s.streams) {
      ASSERT_EQ(stream.kernel_time + stream.idle - stream.overlap, stream.window) << "seed " << seed;
    }
    ASSERT_EQ(rows_total(s) + s.device_idle - s.device_overlap, s.device_window) << "seed " << seed;
    for (const auto& device : s.devices) {
      ASSERT_EQ(device.kernel_time + device.idle - device.overlap, device.window) << "seed " << seed;
      ASSERT_GE(device.idle.count(), 0) << "seed " << seed;
    }
  }
}

instant instant_at(std::chrono::nanoseconds t) { return instant{t}; }

// --- the union of kernels on a timeline (summary_builder.hpp), bounded by its reorder window ---

TEST(IntervalUnion, IsExactWhateverTheOrderWithinItsWindow) {
  detail::interval_union u{4};
  // Added out of order, but never more than 4 places late.
  u.add(instant_at(20ns), instant_at(30ns));
  u.add(instant_at(0ns), instant_at(10ns));
  u.add(instant_at(25ns), instant_at(40ns));
  u.add(instant_at(5ns), instant_at(12ns));
  u.add(instant_at(50ns), instant_at(60ns));
  u.finish();
  EXPECT_EQ(u.span(), 60ns);
  EXPECT_EQ(u.busy(), 12ns + 20ns + 10ns);
  EXPECT_EQ(u.length_sum(), 10ns + 10ns + 15ns + 7ns + 10ns);
  EXPECT_EQ(u.out_of_order(), 0u);
}

TEST(IntervalUnion, CountsAnIntervalThatCameLaterThanItsWindow) {
  detail::interval_union u{1};
  u.add(instant_at(100ns), instant_at(110ns));
  u.add(instant_at(200ns), instant_at(210ns));
  u.add(instant_at(300ns), instant_at(310ns));
  u.add(instant_at(0ns), instant_at(10ns));  // three places late, with room for one
  u.finish();
  EXPECT_EQ(u.out_of_order(), 1u);
  EXPECT_EQ(u.span(), 310ns);
}

TEST(IntervalUnion, AnIntervalLaterThanItsWindowAddsAtMostItsOwnLengthToTheBusyTime) {
  detail::interval_union u{1};
  u.add(instant_at(100ns), instant_at(110ns));
  u.add(instant_at(200ns), instant_at(210ns));
  u.add(instant_at(300ns), instant_at(310ns));
  u.add(instant_at(0ns), instant_at(10ns));     // far too late, and apart from every other
  u.add(instant_at(190ns), instant_at(205ns));  // too late, and reaching into the run after it
  u.finish();
  EXPECT_EQ(u.out_of_order(), 2u);
  // The union exactly here (10 + 10 + 20 + 10), not the 200 ns back to the late one's start.
  EXPECT_EQ(u.busy(), 50ns);
  EXPECT_EQ(u.span(), 310ns);
}

/// The union as interval_union computed it with one priority queue for its reorder buffer (before
/// the in-order FIFO beside the heap): the reference the FIFO must not change a result of.
class reference_union {
 public:
  explicit reference_union(std::size_t window) : window_{window} {}

  void add(instant start, instant end) {
    length_sum_ += end - start;
    first_ = first_ ? std::min(*first_, start) : start;
    last_ = std::max(last_, end);
    waiting_.emplace(start, end);
    if (waiting_.size() > window_) {
      join(waiting_.top());
      waiting_.pop();
    }
  }
  void finish() {
    for (; !waiting_.empty(); waiting_.pop()) join(waiting_.top());
  }
  std::chrono::nanoseconds span() const { return first_ ? last_ - *first_ : 0ns; }
  std::chrono::nanoseconds busy() const {
    return busy_ + (run_ ? run_->second - run_->first : 0ns);
  }
  std::chrono::nanoseconds length_sum() const { return length_sum_; }
  std::size_t out_of_order() const { return out_of_order_; }

 private:
  using interval = std::pair<instant, instant>;
  void join(const interval& next) {
    if (!run_) {
      run_ = next;
      return;
    }
    if (next.first < run_->first) {
      ++out_of_order_;
      busy_ += std::min(next.second, run_->first) - next.first;
      if (next.second > run_->first) run_->second = std::max(run_->second, next.second);
      return;
    }
    if (next.first <= run_->second) {
      run_->second = std::max(run_->second, next.second);
      return;
    }
    busy_ += run_->second - run_->first;
    run_ = next;
  }

  std::size_t window_;
  std::priority_queue<interval, std::vector<interval>, std::greater<>> waiting_;
  std::optional<interval> run_;
  std::optional<instant> first_;
  instant last_{};
  std::chrono::nanoseconds busy_{0};
  std::chrono::nanoseconds length_sum_{0};
  std::size_t out_of_order_ = 0;
};

TEST(IntervalUnion, GivesWhatOneReorderHeapGaveWhateverTheArrivalOrder) {
  // Runs mostly in order, as kernels reach a union, broken by late arrivals a few places or far
  // more than a window late, by repeats, and by a second stream's run merged in behind the first.
  for (std::uint32_t seed = 0; seed < 300; ++seed) {
    std::mt19937 random{seed};
    const std::size_t window = std::size_t{1} << (seed % 7);
    const int count = 1 + static_cast<int>(random() % 600);
    std::vector<std::pair<std::int64_t, std::int64_t>> intervals;
    std::int64_t clock = 0;
    for (int i = 0; i < count; ++i) {
      clock += static_cast<std::int64_t>(random() % 50);
      const auto length = static_cast<std::int64_t>(random() % 80);
      intervals.emplace_back(clock, clock + length);
    }
    for (std::size_t i = 0; i + 1 < intervals.size(); ++i) {
      switch (random() % 8) {
        case 0:  // a few places late
          std::swap(intervals[i], intervals[std::min(intervals.size() - 1, i + random() % 6)]);
          break;
        case 1:  // far later than the window
          std::swap(intervals[i], intervals[std::min(intervals.size() - 1, i + random() % 200)]);
          break;
        case 2:  // the same interval again
          intervals[i + 1] = intervals[i];
          break;
        default:
          break;
      }
    }
    if (seed % 5 == 0) std::shuffle(intervals.begin() + count / 2, intervals.end(), random);
    detail::interval_union u{seed % 11 == 0 ? detail::interval_union::unbounded : window};
    reference_union expected{seed % 11 == 0 ? detail::interval_union::unbounded : window};
    for (const auto& [start, end] : intervals) {
      u.add(instant_at(std::chrono::nanoseconds{start}), instant_at(std::chrono::nanoseconds{end}));
      expected.add(instant_at(std::chrono::nanoseconds{start}),
                   instant_at(std::chrono::nanoseconds{end}));
    }
    u.finish();
    expected.finish();
    ASSERT_EQ(u.span(), expected.span()) << "seed " << seed;
    ASSERT_EQ(u.busy(), expected.busy()) << "seed " << seed;
    ASSERT_EQ(u.length_sum(), expected.length_sum()) << "seed " << seed;
    ASSERT_EQ(u.out_of_order(), expected.out_of_order()) << "seed " << seed;
    ASSERT_LE(u.busy(), u.length_sum()) << "seed " << seed << ": a negative overlap";
  }
}

TEST(IntervalUnion, MergesAnIntervalThatArrivesBehindTheInOrderOnesAsIfSorted) {
  detail::interval_union u{8};
  u.add(instant_at(10ns), instant_at(20ns));
  u.add(instant_at(30ns), instant_at(40ns));
  u.add(instant_at(50ns), instant_at(60ns));
  // Arrives last but bridges the first two: their union is one run from 10 to 40.
  u.add(instant_at(15ns), instant_at(35ns));
  u.finish();
  EXPECT_EQ(u.busy(), 30ns + 10ns);
  EXPECT_EQ(u.out_of_order(), 0u);
}

// --- the timeline, which remembers the unions its last kernel went to ---

TEST(Timeline, PutsEachKernelOnItsOwnStreamAndDeviceWhenTheyAlternate) {
  detail::timeline t{4};
  t.add("cuda", 0, 1, instant_at(0ns), instant_at(10ns));
  t.add("cuda", 0, 2, instant_at(5ns), instant_at(30ns));
  t.add("cuda", 1, 1, instant_at(100ns), instant_at(150ns));
  t.add("cpu", 0, 1, instant_at(200ns), instant_at(201ns));
  t.add("cuda", 0, 1, instant_at(20ns), instant_at(25ns));
  const auto [streams, devices] = t.take();
  ASSERT_EQ(streams.size(), 4u);
  EXPECT_EQ(streams.at(detail::stream_key{"cuda", 0, 1}).busy(), 15ns);
  EXPECT_EQ(streams.at(detail::stream_key{"cuda", 0, 2}).busy(), 25ns);
  EXPECT_EQ(streams.at(detail::stream_key{"cuda", 1, 1}).busy(), 50ns);
  EXPECT_EQ(streams.at(detail::stream_key{"cpu", 0, 1}).busy(), 1ns);
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices.at(detail::device_key{"cuda", 0}).busy(), 30ns);
  EXPECT_EQ(devices.at(detail::device_key{"cuda", 0}).length_sum(), 10ns + 25ns + 5ns);
  EXPECT_EQ(devices.at(detail::device_key{"cuda", 1}).busy(), 50ns);
  EXPECT_EQ(devices.at(detail::device_key{"cpu", 0}).busy(), 1ns);
}

TEST(Timeline, GivesADeviceTheUnionOfEveryIntervalOfItsStreamsBeforeAndAfterItsSecondStream) {
  // The device's union stands in for its first stream's until a second stream comes: what it
  // reports must be what a union fed every interval of the device would, reorder window included.
  detail::timeline t{2};
  detail::interval_union every{2};
  const auto place = [&](std::uint64_t stream, std::chrono::nanoseconds from,
                         std::chrono::nanoseconds to) {
    t.add("cuda", 0, stream, instant_at(from), instant_at(to));
    every.add(instant_at(from), instant_at(to));
  };
  place(1, 0ns, 10ns);
  place(1, 30ns, 40ns);
  place(1, 20ns, 25ns);  // late, inside the window
  place(1, 60ns, 70ns);
  place(2, 5ns, 35ns);  // the second stream: late for the device's window
  place(1, 80ns, 90ns);
  place(2, 85ns, 100ns);
  const auto [streams, devices] = t.take();
  every.finish();
  const auto& device = devices.at(detail::device_key{"cuda", 0});
  EXPECT_EQ(device.busy(), every.busy());
  EXPECT_EQ(device.span(), every.span());
  EXPECT_EQ(device.length_sum(), every.length_sum());
  EXPECT_EQ(device.out_of_order(), every.out_of_order());
  EXPECT_EQ(streams.at(detail::stream_key{"cuda", 0, 1}).length_sum(),
            10ns + 10ns + 5ns + 10ns + 10ns);
}

TEST(Timeline, GivesADeviceOfOneStreamThatStreamsUnionInATakeAndASnapshot) {
  detail::timeline t{4};
  t.add("cuda", 0, 7, instant_at(0ns), instant_at(10ns));
  t.add("cuda", 0, 7, instant_at(20ns), instant_at(25ns));
  const auto [snapshot_streams, snapshot_devices] = t.snapshot();
  EXPECT_EQ(snapshot_devices.at(detail::device_key{"cuda", 0}).busy(), 15ns);
  EXPECT_EQ(snapshot_devices.at(detail::device_key{"cuda", 0}).span(), 25ns);
  t.add("cuda", 0, 7, instant_at(30ns), instant_at(32ns));
  const auto [streams, devices] = t.take();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices.at(detail::device_key{"cuda", 0}).busy(), 17ns);
  EXPECT_EQ(streams.at(detail::stream_key{"cuda", 0, 7}).busy(), 17ns);
  const auto [next_streams, next_devices] = t.take();
  EXPECT_TRUE(next_devices.empty()) << "the next pass starts with no device";
}

TEST(Timeline, StartsTheNextPassEmptyOnTheStreamItUsedLast) {
  detail::timeline t{4};
  t.add("cuda", 0, 1, instant_at(0ns), instant_at(10ns));
  const auto first = t.take();
  t.add("cuda", 0, 1, instant_at(50ns), instant_at(55ns));
  const auto [streams, devices] = t.take();
  EXPECT_EQ(first.first.at(detail::stream_key{"cuda", 0, 1}).length_sum(), 10ns);
  EXPECT_EQ(streams.at(detail::stream_key{"cuda", 0, 1}).length_sum(), 5ns);
  EXPECT_EQ(streams.at(detail::stream_key{"cuda", 0, 1}).span(), 5ns);
  EXPECT_EQ(devices.at(detail::device_key{"cuda", 0}).span(), 5ns);
}

}  // namespace
}  // namespace launchwatch
