// An aggregate-only attribution: the same summary as a full one, from memory that does not grow
// with the launches; and the reorder window its timeline goes through.

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/report/tree.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_clock.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using testing::fake_clock;

constexpr std::array<std::string_view, 3> kernels{"demo::ops::matmul<float, 16>",
                                                  "demo::ops::softmax<float>", "demo::copy"};

/// Runs `launches` launches through the launch path's hooks under `observer`: in scopes
/// `model/layer i/{attention,mlp}`, on two streams of one device that overlap now and then, with
/// device timestamps on the fake clock, every seventh launch dry and every eleventh untimed.
void run(const std::shared_ptr<attribution>& observer, int launches) {
  launch_observation watching{observer};
  std::chrono::nanoseconds now{0};
  scope model{"model"};
  for (int i = 0; i < launches; ++i) {
    scope layer{"layer " + std::to_string(i / 1000 % 4)};
    scope part{i % 3 == 0 ? "mlp" : "attention"};
    launch_info info;
    info.kernel = kernels[static_cast<std::size_t>(i) % kernels.size()];
    info.backend = "cpu";
    info.stream = 1 + static_cast<std::uint64_t>(i % 2);
    info.dry_run = i % 7 == 0;
    fake_clock::set(now);
    launch_path::notify_launch(info);
    now += 100ns;
    if (i % 11 != 0) {
      const auto start = now + std::chrono::nanoseconds{(i % 2) * 40};
      const auto end = start + std::chrono::nanoseconds{200 + 10 * (i % 5)};
      fake_clock::set(now);
      launch_path::notify_profiled(info.kernel, profile_duration{[=]() -> std::optional<profile_ticks> {
                                     return profile_ticks::from_start_end(fake_clock::at(start),
                                                                          fake_clock::at(end));
                                   },
                                   timing_method::device});
    }
    now += 200ns;
  }
}

std::shared_ptr<attribution> make(bool aggregate_only) {
  attribution_options options;
  options.clock = &fake_clock::now;
  options.aggregate_only = aggregate_only;
  return std::make_shared<attribution>(options);
}

TEST(AggregateOnly, GivesTheSameSummaryAsTheFullRecord) {
  // Enough launches for several folds, and a pass that does not end on a fold.
  constexpr int launches = 3 * 4096 + 123;
  const auto full = make(false);
  run(full, launches);
  const auto aggregate = make(true);
  run(aggregate, launches);
  const auto expected = summarize(full->collect());
  const auto got = aggregate->collect_summary();
  EXPECT_EQ(got.launches, static_cast<std::size_t>(launches));
  EXPECT_EQ(got.out_of_order_kernels, 0u);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(render_tree(got), render_tree(expected));
}

/// Every kernel row under `nodes`, wherever it is.
void kernel_rows(const std::vector<summary_node>& nodes, std::vector<const summary_node*>& found) {
  for (const auto& node : nodes) {
    if (node.kind == summary_node::node_kind::kernel) found.push_back(&node);
    kernel_rows(node.children, found);
  }
}

TEST(AggregateOnly, KeepsEachKernelsShortestAndLongestLaunchAcrossFolds) {
  // run() times each launch 200 + 10 * (i % 5) ns: every row meets all five lengths.
  const auto aggregate = make(true);
  run(aggregate, 3 * 4096 + 123);
  const auto summary = aggregate->collect_summary();
  std::vector<const summary_node*> rows;
  kernel_rows(summary.scopes, rows);
  ASSERT_FALSE(rows.empty());
  for (const auto* row : rows) {
    EXPECT_EQ(row->min_time, 200ns) << row->name;
    EXPECT_EQ(row->max_time, 240ns) << row->name;
  }
}

TEST(AggregateOnly, TakesTheShortestAndLongestLaunchOverEveryThread) {
  // One kernel in one scope from two threads: a group each, joined in one row.
  const auto aggregate = make(true);
  launch_observation watching{aggregate};
  auto launch_for = [](std::chrono::nanoseconds at, std::chrono::nanoseconds length) {
    scope s{"s"};
    launch_info info;
    info.kernel = "k";
    info.backend = "cpu";
    info.stream = 1;
    fake_clock::set(at);
    launch_path::notify_launch(info);
    launch_path::notify_profiled(info.kernel, profile_duration{[=]() -> std::optional<profile_ticks> {
                                   return profile_ticks::from_start_end(fake_clock::at(at),
                                                                        fake_clock::at(at + length));
                                 },
                                 timing_method::device});
  };
  std::thread{[&] { launch_for(0ns, 100ns); }}.join();
  std::thread{[&] { launch_for(1000ns, 300ns); }}.join();
  const auto summary = aggregate->collect_summary();
  ASSERT_EQ(summary.scopes.size(), 1u);
  ASSERT_EQ(summary.scopes[0].children.size(), 1u);
  const auto& k = summary.scopes[0].children[0];
  EXPECT_EQ(k.launches, 2u);
  EXPECT_EQ(k.min_time, 100ns);
  EXPECT_EQ(k.max_time, 300ns);
}

/// One kernel's name at two addresses, as two launch sources may each hold it (both outlive
/// every launch, as launch_info::kernel requires).
const std::string first_copy{"demo::ops::twice<float>"};
const std::string second_copy{first_copy};

TEST(AggregateOnly, TotalsOneKernelNamedAtTwoAddressesInOneRow) {
  // The fold finds a launch's row by its name's address first; the name decides the row.
  ASSERT_NE(first_copy.data(), second_copy.data());
  const auto aggregate = make(true);
  {
    launch_observation watching{aggregate};
    scope s{"s"};
    for (int i = 0; i < 3 * 4096 + 5; ++i) {
      launch_info info;
      info.kernel = i % 3 == 0 ? std::string_view{first_copy} : std::string_view{second_copy};
      info.backend = "cpu";
      info.stream = 1;
      launch_path::notify_launch(info);
    }
  }
  const auto summary = aggregate->collect_summary();
  ASSERT_EQ(summary.scopes.size(), 1u);
  ASSERT_EQ(summary.scopes[0].children.size(), 1u);
  EXPECT_EQ(summary.scopes[0].children[0].name, first_copy);
  EXPECT_EQ(summary.scopes[0].children[0].launches, 3u * 4096u + 5u);
}

TEST(AggregateOnly, ReadsTheClockOnceForATimedLaunchOutsideTheTracePrefix) {
  // When a launch returned is read only by a trace, so its measurement's arrival stamps nothing.
  attribution_options options;
  options.clock = &fake_clock::counted_now;
  options.aggregate_only = true;
  const auto aggregate = std::make_shared<attribution>(options);
  launch_observation watching{aggregate};
  const long before = fake_clock::reads.load();
  for (int i = 0; i < 100; ++i) {
    launch_info info;
    info.kernel = "k";
    launch_path::notify_launch(info);
    launch_path::notify_profiled(info.kernel,
                                 profile_duration{[]() -> std::optional<profile_ticks> {
                                                    return profile_ticks::from_start_end(
                                                        fake_clock::at(0ns), fake_clock::at(10ns));
                                                  },
                                                  timing_method::device});
  }
  EXPECT_EQ(fake_clock::reads.load() - before, 100);
  EXPECT_EQ(aggregate->collect_summary().timed_launches, 100u);
}

TEST(AggregateOnly, StartsTheNextPassAfterEachCollect) {
  const auto aggregate = make(true);
  run(aggregate, 5000);
  EXPECT_EQ(aggregate->collect_summary().launches, 5000u);
  run(aggregate, 10);
  const auto second = aggregate->collect_summary();
  EXPECT_EQ(second.launches, 10u);
  EXPECT_EQ(second.streams.size(), 2u);
}

TEST(AggregateOnly, RefusesToCollectARecordItDoesNotKeep) {
  const auto aggregate = make(true);
  try {
    (void)aggregate->collect();
    FAIL() << "collect() returned a record of an aggregate-only attribution";
  } catch (const std::logic_error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("collect_summary()"));
  }
}

TEST(AggregateOnly, SummarisesAFullAttributionToo) {
  const auto full = make(false);
  run(full, 50);
  EXPECT_EQ(full->collect_summary().launches, 50u);
}

}  // namespace
}  // namespace launchwatch
