// The trace-rules checker itself: each rule catches the trace that breaks it, so a clean result on
// the writer's output means something.

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trace_rules.hpp"

namespace launchwatch::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string names = R"({"ph":"M","pid":1,"tid":0,"name":"process_name","args":{"name":"p"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"t"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"u"}})";

std::string wrap(const std::string& events) {
  return R"({"traceEvents":[)" + names + (events.empty() ? "" : ",\n" + events) + "]}";
}

TEST(TraceRules, AcceptsAWellFormedTrace) {
  EXPECT_THAT(chrome_trace_violations(wrap(
                  R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},
{"ph":"X","name":"b","pid":1,"tid":1,"ts":2,"dur":3},
{"ph":"s","id":1,"pid":1,"tid":1,"ts":3,"bp":"e"},
{"ph":"X","name":"c","pid":1,"tid":2,"ts":4,"dur":2},
{"ph":"f","id":1,"pid":1,"tid":2,"ts":5,"bp":"e"})")),
              IsEmpty());
}

TEST(TraceRules, RequiresTheObjectForm) {
  EXPECT_THAT(chrome_trace_violations("[]"), ElementsAre(HasSubstr("object form")));
  EXPECT_THAT(chrome_trace_violations("{"), ElementsAre(HasSubstr("not JSON")));
}

TEST(TraceRules, RequiresDurOnEveryCompleteEvent) {
  EXPECT_THAT(chrome_trace_violations(wrap(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":0})")),
              ElementsAre(HasSubstr("without \"dur\"")));
}

TEST(TraceRules, CatchesSlicesThatPartlyOverlapOnATrack) {
  EXPECT_THAT(chrome_trace_violations(wrap(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},
{"ph":"X","name":"b","pid":1,"tid":1,"ts":5,"dur":10})")),
              ElementsAre(HasSubstr("partly overlaps")));
}

TEST(TraceRules, AllowsOverlapAcrossTracks) {
  EXPECT_THAT(chrome_trace_violations(wrap(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},
{"ph":"X","name":"b","pid":1,"tid":2,"ts":5,"dur":10})")),
              IsEmpty());
}

TEST(TraceRules, CatchesEventsOutOfTimeOrderOnATrack) {
  EXPECT_THAT(chrome_trace_violations(wrap(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":5,"dur":1},
{"ph":"X","name":"b","pid":1,"tid":1,"ts":2,"dur":1})")),
              ElementsAre(HasSubstr("earlier than the event before it")));
}

TEST(TraceRules, CatchesAFlowWithoutItsOtherEnd) {
  EXPECT_THAT(chrome_trace_violations(wrap(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},
{"ph":"s","id":7,"pid":1,"tid":1,"ts":1,"bp":"e"})")),
              ElementsAre(HasSubstr("flow 7: 1 start(s) and 0 finish(es)")));
}

TEST(TraceRules, CatchesAFlowNotBoundToItsEnclosingSlice) {
  EXPECT_THAT(chrome_trace_violations(wrap(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},
{"ph":"s","id":1,"pid":1,"tid":1,"ts":1},
{"ph":"f","id":1,"pid":1,"tid":1,"ts":2,"bp":"e"})")),
              ElementsAre(HasSubstr("\"bp\": \"e\"")));
}

TEST(TraceRules, CatchesAFlowEndOutsideEverySlice) {
  EXPECT_THAT(chrome_trace_violations(wrap(R"({"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},
{"ph":"s","id":1,"pid":1,"tid":1,"ts":1,"bp":"e"},
{"ph":"f","id":1,"pid":1,"tid":1,"ts":10,"bp":"e"})")),
              ElementsAre(HasSubstr("inside no slice")));
}

TEST(TraceRules, CatchesATrackOrProcessWithNoName) {
  const std::string unnamed = R"({"traceEvents":[{"ph":"X","name":"a","pid":3,"tid":4,"ts":0,"dur":1}]})";
  EXPECT_THAT(chrome_trace_violations(unnamed),
              ElementsAre(HasSubstr("process 3 has no process_name"),
                          HasSubstr("track 3/4 has no thread_name")));
}

}  // namespace
}  // namespace launchwatch::testing
