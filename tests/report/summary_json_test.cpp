// The JSON summary reads back as the summary it was written from, and bad input says what is wrong.

#include <launchwatch/errors.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/summary_json.hpp>
#include <launchwatch/report/tree.hpp>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sample_passes.hpp"
#include "support/golden.hpp"
#include "written_by.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string to_json(const pass_summary& s) {
  std::ostringstream out;
  write_summary_json(out, s);
  return out.str();
}

pass_summary from_json(const std::string& text) {
  std::istringstream in{text};
  return read_summary_json(in, "summary.json");
}

/// The message read_summary_json throws for `text`, or "" if it reads.
std::string error_reading(const std::string& text) {
  try {
    (void)from_json(text);
  } catch (const summary_error& error) {
    return error.what();
  }
  return "";
}

/// The sample's summary JSON with `from` replaced by `to` (once).
std::string edited(const std::string& from, const std::string& to) {
  auto text = to_json(summarize(testing::sample_pass()));
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(SummaryJson, ReadsBackAnEqualSummary) {
  for (const auto& pass : {testing::sample_pass(), testing::mixed_pass(), testing::untimed_pass(),
                           testing::random_pass(7)}) {
    const auto original = summarize(pass);
    EXPECT_EQ(from_json(to_json(original)), original);
  }
}

TEST(SummaryJson, ReRendersTheSameTree) {
  const auto original = summarize(testing::sample_pass());
  EXPECT_EQ(render_tree(from_json(to_json(original))), render_tree(original));
}

TEST(SummaryJson, LoadsAFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("launchwatch_summary_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                     ".json");
  const auto original = summarize(testing::sample_pass());
  {
    std::ofstream out{path};
    write_summary_json(out, original);
  }
  EXPECT_EQ(load_summary(path), original);
  std::filesystem::remove(path);
}

TEST(SummaryJson, SaysWhichFileCouldNotBeOpened) {
  try {
    (void)load_summary("/nonexistent/launchwatch/summary.json");
    FAIL() << "expected summary_error";
  } catch (const summary_error& error) {
    EXPECT_THAT(error.what(), AllOf(HasSubstr("/nonexistent/launchwatch/summary.json"),
                                    HasSubstr("No such file")));
  }
}

TEST(SummaryJson, ASummaryThatCannotBeReadThrowsALaunchwatchError) {
  // Like every exception launchwatch throws on purpose, so one handler catches them all.
  EXPECT_THROW((void)load_summary("/nonexistent/launchwatch/summary.json"), launchwatch::error);
  EXPECT_THROW((void)from_json("launches: 3"), launchwatch::error);
}

TEST(SummaryJson, WritesTheFieldsItsDocumentationNames) {
  // The names write_summary_json's documentation and docs/report_format.md give, in order.
  const auto root = nlohmann::json::parse(to_json(summarize(testing::sample_pass())));
  std::vector<std::string> top;
  for (const auto& [key, value] : root.items()) top.push_back(key);
  EXPECT_THAT(top, ::testing::UnorderedElementsAre(
                       "format", "version", "timing", "methods", "measurements", "launches",
                       "timed_launches", "dry_run_launches", "captured_launches", "host_threads",
                       "lost", "window_ns", "kernel_ns", "idle_ns", "overlap_ns", "unplaced_ns",
                       "scopes", "outside_scopes", "streams", "device_window_ns",
                       "device_idle_ns", "device_overlap_ns", "devices", "out_of_order_kernels"));
  std::vector<std::string> row;
  for (const auto& [key, value] : root["scopes"][0].items()) row.push_back(key);
  EXPECT_THAT(row, ::testing::UnorderedElementsAre("kind", "name", "launches", "timed_launches",
                                                   "dry_run_launches", "self_ns", "total_ns",
                                                   "methods", "children"));
  std::vector<std::string> stream;
  for (const auto& [key, value] : root["streams"][0].items()) stream.push_back(key);
  EXPECT_THAT(stream, ::testing::UnorderedElementsAre("backend", "device", "stream", "launches",
                                                      "timed_launches", "window_ns", "kernel_ns",
                                                      "idle_ns", "overlap_ns", "unplaced_ns"));
  std::vector<std::string> device;
  for (const auto& [key, value] : root["devices"][0].items()) device.push_back(key);
  EXPECT_THAT(device, ::testing::UnorderedElementsAre("backend", "device", "streams", "launches",
                                                      "timed_launches", "window_ns", "kernel_ns",
                                                      "idle_ns", "overlap_ns", "unplaced_ns"));
  std::vector<std::string> measurements;
  for (const auto& [key, value] : root["measurements"].items()) measurements.push_back(key);
  EXPECT_THAT(measurements,
              ::testing::UnorderedElementsAre("device_stamped", "device_lengths", "system_stamped",
                                              "system_lengths"));
}

TEST(SummaryJson, WritesTheShortestAndLongestLaunchOfATimedKernelRow) {
  testing::pass_builder b;
  const auto t = b.thread("t");
  const auto s = b.stream(1);
  b.kernel({t, "k", {"a"}, s, 0us, 0us}, 0us, 10us);
  b.kernel({t, "k", {"a"}, s, 1us, 1us}, 10us, 40us);
  const auto root = nlohmann::json::parse(to_json(summarize(b.pass())));
  const auto& kernel = root["scopes"][0]["children"][0];
  EXPECT_EQ(kernel["min_ns"], 10'000);
  EXPECT_EQ(kernel["max_ns"], 30'000);
  EXPECT_FALSE(root["scopes"][0].contains("min_ns"));  // a scope mixes kernels: no min or max
}

TEST(SummaryJson, ReadsASummaryWrittenBeforeMinAndMaxWithoutThem) {
  auto root = nlohmann::json::parse(to_json(summarize(testing::sample_pass())));
  // Every row of an older summary.json: the same fields, no min_ns or max_ns.
  const std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& row) {
    row.erase("min_ns");
    row.erase("max_ns");
    if (row.contains("children")) {
      for (auto& child : row["children"]) strip(child);
    }
  };
  for (auto& scope : root["scopes"]) strip(scope);
  strip(root["outside_scopes"]);
  const auto summary = from_json(root.dump());
  const auto& loader_fill = summary.scopes.at(0).children.at(0);
  EXPECT_EQ(loader_fill.kind, summary_node::node_kind::kernel);
  EXPECT_EQ(loader_fill.total, 50us);
  EXPECT_EQ(loader_fill.min_time, std::nullopt);
  EXPECT_EQ(loader_fill.max_time, std::nullopt);
}

TEST(SummaryJson, RefusesTextThatIsNotJson) {
  EXPECT_THAT(error_reading("launches: 3"), AllOf(HasSubstr("summary.json is not valid JSON"),
                                                   HasSubstr("parse error")));
  EXPECT_THAT(error_reading(""), HasSubstr("not valid JSON"));
}

TEST(SummaryJson, RefusesANumberTooLargeForADouble) {
  // Found by fuzz_summary_json: nlohmann throws out_of_range, not parse_error, for it.
  EXPECT_THAT(error_reading(edited("\"window_ns\": ", "\"window_ns\": 60e8468, \"was\": ")),
              AllOf(HasSubstr("summary.json holds JSON that cannot be read"),
                    HasSubstr("number overflow"), HasSubstr("60e8468")));
}

TEST(SummaryJson, RefusesJsonThatIsNotALaunchwatchSummary) {
  EXPECT_THAT(error_reading(R"({"traceEvents": []})"), HasSubstr("/format: this field is missing"));
  EXPECT_THAT(error_reading(R"({"format": "speedscope"})"),
              AllOf(HasSubstr("is not a launchwatch summary"), HasSubstr("\"speedscope\"")));
  EXPECT_THAT(error_reading("[1, 2]"), HasSubstr("expected a JSON object"));
}

TEST(SummaryJson, RefusesANewerFormatVersionAndSaysToUpdate) {
  EXPECT_THAT(error_reading(edited("\"version\": 3", "\"version\": 4")),
              AllOf(HasSubstr("newer launchwatch"), HasSubstr("version 4"), HasSubstr("Update")));
}

TEST(SummaryJson, RefusesAnOlderFormatVersionAndSaysToWriteItAgain) {
  EXPECT_THAT(error_reading(edited("\"version\": 3", "\"version\": 2")),
              AllOf(HasSubstr("older launchwatch"), HasSubstr("version 2"),
                    HasSubstr("write it again")));
}

TEST(SummaryJson, NamesTheLocationOfAMissingField) {
  EXPECT_THAT(error_reading(edited("\"window_ns\"", "\"window\"")),
              HasSubstr("summary.json: /window_ns: this field is missing"));
}

TEST(SummaryJson, NamesTheLocationAndTypeOfAWrongValue) {
  EXPECT_THAT(error_reading(edited("\"launches\": 9", "\"launches\": \"nine\"")),
              AllOf(HasSubstr("/scopes/1/launches"), HasSubstr("expected an integer"),
                    HasSubstr("\"nine\" (string)")));
  EXPECT_THAT(error_reading(edited("\"kind\": \"kernel\"", "\"kind\": \"function\"")),
              HasSubstr("expected \"scope\" or \"kernel\""));
  EXPECT_THAT(error_reading(edited("\"timing\": \"deferred\"", "\"timing\": \"sometimes\"")),
              HasSubstr("/timing: expected \"none\", \"resolved\" or \"deferred\""));
  EXPECT_THAT(error_reading(edited("\"host_threads\": 2", "\"host_threads\": -2")),
              HasSubstr("/host_threads: expected a count of 0 or more"));
}

/// The sample's summary with its first scope holding a chain of scopes, each the only child of the
/// one above, `levels` rows below it.
pass_summary with_nested_scopes(std::size_t levels) {
  auto summary = summarize(testing::sample_pass());
  summary_node* row = &summary.scopes.at(0);
  for (std::size_t level = 1; level <= levels; ++level) {
    summary_node child;
    child.name = "level " + std::to_string(level);
    row->children.push_back(std::move(child));
    row = &row->children.back();
  }
  return summary;
}

TEST(SummaryJson, ScopesNestedAsDeepAsTheLimitReadBack) {
  const auto summary = with_nested_scopes(summary_max_scope_depth);
  EXPECT_EQ(from_json(to_json(summary)), summary);
}

TEST(SummaryJson, ScopesNestedPastTheLimitAreAClearError) {
  EXPECT_THAT(error_reading(to_json(with_nested_scopes(summary_max_scope_depth + 1))),
              AllOf(HasSubstr("summary.json: /scopes/0/children/"),
                    HasSubstr("more than " + std::to_string(summary_max_scope_depth) + " levels"),
                    HasSubstr("summary_max_scope_depth"), HasSubstr("nest them less")));
}

TEST(SummaryJson, ADeeplyNestedFileIsAClearErrorNotAStackOverflow) {
  // A million levels: reading it recursively (describing the value, or walking `children`) would
  // overflow any thread's stack.
  constexpr std::size_t levels = 1'000'000;
  const std::string arrays = std::string(levels, '[') + std::string(levels, ']');
  std::string scopes = "{\"format\": \"launchwatch-summary\", \"version\": 2, \"scopes\": [";
  for (std::size_t i = 0; i < levels / 20; ++i) scopes += "{\"kind\": \"scope\", \"children\": [";
  for (const auto& text : {arrays, scopes}) {
    EXPECT_THAT(error_reading(text),
                AllOf(HasSubstr("summary.json nests JSON arrays and objects more than " +
                                std::to_string(summary_max_json_depth) + " levels deep"),
                      HasSubstr("write it again")));
  }
}

TEST(SummaryJson, MatchesTheGoldenFile) {
  std::ostringstream out;
  write_summary_json(out, summarize(testing::sample_pass()));
  testing::expect_matches_golden("summary.json", out.str());
}

TEST(SummaryJsonWriter, MatchesTheGoldenFile) {
  summary_json_writer writer;
  testing::expect_matches_golden("summary.json",
                                 testing::written_by(writer, summarize(testing::sample_pass())));
}

}  // namespace
}  // namespace launchwatch
