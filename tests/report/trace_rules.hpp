// A checker for the Chrome trace rules of docs/design.md §7, run against the trace writer's output.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace launchwatch::testing {

/// Every way `trace` breaks the rules Perfetto and chrome://tracing rely on, one message each;
/// empty when it keeps them all:
/// - object form: a top-level object whose "traceEvents" is an array of event objects;
/// - every event has a string "ph", an integer "pid" and "tid", and (but "M") a numeric "ts";
/// - every complete event ("X") has a name and a "dur" of 0 or more;
/// - on each track (pid, tid), events come in time order, and slices nest (none partly overlaps
///   another);
/// - flows: each id has one "s" and one "f", both with "bp": "e", each inside a slice of its track;
/// - metadata ("M") names every process and every track that has events.
std::vector<std::string> chrome_trace_violations(std::string_view trace);

}  // namespace launchwatch::testing
