// Merging the summaries of a job's processes (launchwatch report --merge): a top-level row per
// process, every process's time accounted for, its devices kept apart, and the label it recorded.

#include <launchwatch/report/merge.hpp>

#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/summary_json.hpp>
#include <launchwatch/report/tree.hpp>

#include <chrono>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sample_passes.hpp"
#include "support/golden.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;

std::vector<process_summary> two_ranks() {
  return {{"rank 0", summarize(testing::sample_pass())}, {"rank 1", summarize(testing::mixed_pass())}};
}

std::chrono::nanoseconds top_level_total(const pass_summary& s) {
  std::chrono::nanoseconds sum = s.outside.total;
  for (const auto& scope : s.scopes) sum += scope.total;
  return sum;
}

TEST(MergedSummaries, MakeEachProcessATopLevelRowHoldingItsScopesAndItsLaunchesOutsideAnyScope) {
  const auto ranks = two_ranks();
  const auto merged = merge_summaries(ranks);
  ASSERT_EQ(merged.scopes.size(), 2u);
  EXPECT_TRUE(merged.outside.children.empty()) << "every launch is some process's";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const auto& row = merged.scopes[i];
    const auto& part = ranks[i].summary;
    EXPECT_EQ(row.name, ranks[i].label);
    EXPECT_EQ(row.total, top_level_total(part));
    EXPECT_EQ(row.self, part.outside.total) << "its launches outside any scope are its own kernels";
    EXPECT_EQ(row.children.size(), part.scopes.size() + part.outside.children.size());
    EXPECT_EQ(row.children.front(), part.scopes.front()) << "its scopes, unchanged, come first";
    EXPECT_EQ(row.children.back(), part.outside.children.back());
  }
}

TEST(MergedSummaries, AccountForEveryProcesssWindowWithEachOnesIdentityKept) {
  const auto ranks = two_ranks();
  const auto merged = merge_summaries(ranks);
  std::chrono::nanoseconds windows{0}, device_windows{0};
  std::size_t launches = 0;
  for (const auto& rank : ranks) {
    windows += rank.summary.window;
    device_windows += rank.summary.device_window;
    launches += rank.summary.launches;
  }
  EXPECT_EQ(merged.window, windows);
  EXPECT_EQ(merged.device_window, device_windows);
  EXPECT_EQ(merged.launches, launches);
  EXPECT_EQ(top_level_total(merged) + merged.idle - merged.overlap, merged.window);
  EXPECT_EQ(top_level_total(merged) + merged.device_idle - merged.device_overlap,
            merged.device_window);
  EXPECT_EQ(merged.timing, timing_request::deferred) << "the timing that measured most";
  EXPECT_TRUE(merged.methods.mixed());
}

TEST(MergedSummaries, KeepEachProcesssDevicesApartUnderItsLabel) {
  std::vector<process_summary> ranks{{"rank 0", summarize(testing::mixed_pass())},
                                     {"rank 1", summarize(testing::mixed_pass())}};
  const auto merged = merge_summaries(ranks);
  ASSERT_EQ(merged.devices.size(), 2u) << "both ranks' cuda device 0, as two devices";
  EXPECT_EQ(merged.devices[0].process, "rank 0");
  EXPECT_EQ(merged.devices[1].process, "rank 1");
  ASSERT_EQ(merged.streams.size(), 2u);
  EXPECT_EQ(merged.streams[1].process, "rank 1");
  EXPECT_EQ(merged.streams[1].stream, ranks[1].summary.streams[0].stream);
}

TEST(MergedSummaries, AreRefusedWhenTwoProcessesHaveTheSameLabel) {
  std::vector<process_summary> ranks{{"rank 0", summarize(testing::mixed_pass())},
                                     {"rank 0", summarize(testing::sample_pass())}};
  try {
    (void)merge_summaries(ranks);
    FAIL() << "merged two processes under one label";
  } catch (const summary_error& error) {
    EXPECT_NE(std::string{error.what()}.find("'rank 0'"), std::string::npos) << error.what();
  }
  EXPECT_THROW((void)merge_summaries(std::vector<process_summary>{}), summary_error);
}

TEST(MergedSummaries, KeepTheirProcessLabelsThroughTheJsonSummary) {
  auto merged = merge_summaries(two_ranks());
  merged.process = "job 7";
  std::stringstream json;
  write_summary_json(json, merged);
  EXPECT_EQ(read_summary_json(json), merged);
}

TEST(MergedSummaries, RenderAsTheGoldenTree) {
  std::ostringstream out;
  write_tree(out, merge_summaries(two_ranks()), tree_options{});
  testing::expect_matches_golden("tree_merged.txt", out.str());
}

/// Sets (or clears, with nullopt) an environment variable for the test's length.
class environment_variable {
 public:
  environment_variable(const char* name, std::optional<std::string> value) : name_{name} {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~environment_variable() { set(old_); }
  environment_variable(const environment_variable&) = delete;
  environment_variable& operator=(const environment_variable&) = delete;

 private:
  void set(const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name_, value->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ProcessLabel, ComesFromTheFirstRankVariableALauncherSet) {
  environment_variable torch{"RANK", std::nullopt};
  environment_variable open_mpi{"OMPI_COMM_WORLD_RANK", "3"};
  environment_variable mpich{"PMI_RANK", "5"};
  environment_variable slurm{"SLURM_PROCID", std::nullopt};
  EXPECT_EQ(process_label_from_environment(), "rank 3");
  {
    environment_variable set_by_torchrun{"RANK", "1"};
    EXPECT_EQ(process_label_from_environment(), "rank 1");
  }
}

TEST(ProcessLabel, IsEmptyOutsideALauncher) {
  environment_variable torch{"RANK", std::nullopt};
  environment_variable open_mpi{"OMPI_COMM_WORLD_RANK", std::nullopt};
  environment_variable mpich{"PMI_RANK", std::nullopt};
  environment_variable slurm{"SLURM_PROCID", std::nullopt};
  EXPECT_EQ(process_label_from_environment(), "");
}

}  // namespace
}  // namespace launchwatch
