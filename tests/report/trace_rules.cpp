#include "trace_rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace launchwatch::testing {
namespace {

using json = nlohmann::json;
using track_key = std::pair<std::int64_t, std::int64_t>;

std::int64_t to_ns(const json& micros) {
  return static_cast<std::int64_t>(std::llround(micros.get<double>() * 1000.0));
}

std::string describe(std::size_t index, const json& event) {
  return "event " + std::to_string(index) + " " + event.dump();
}

struct track_state {
  std::int64_t last_ts = INT64_MIN;
  std::vector<std::int64_t> open_ends;  // ends of the slices enclosing the current instant

  /// Closes the slices that ended at or before `ts`, as a trace processor does when it reaches it.
  void advance(std::int64_t ts) {
    while (!open_ends.empty() && open_ends.back() <= ts) open_ends.pop_back();
  }
};

}  // namespace

std::vector<std::string> chrome_trace_violations(std::string_view trace) {
  std::vector<std::string> violations;
  json root;
  try {
    root = json::parse(trace);
  } catch (const json::parse_error& error) {
    violations.push_back(std::string{"not JSON: "} + error.what());
    return violations;
  }
  if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array()) {
    violations.push_back("not the object form {\"traceEvents\": [...]}");
    return violations;
  }

  std::map<track_key, track_state> tracks;
  std::set<std::int64_t> named_processes;
  std::set<track_key> named_tracks;
  std::set<std::int64_t> used_processes;
  std::set<track_key> used_tracks;
  struct flow_ends {
    int starts = 0;
    int finishes = 0;
  };
  std::map<std::string, flow_ends> flows;

  const auto& events = root["traceEvents"];
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) {
      violations.push_back(describe(i, e) + ": not an event object with a string \"ph\"");
      continue;
    }
    if (!e.contains("pid") || !e["pid"].is_number_integer() || !e.contains("tid") ||
        !e["tid"].is_number_integer()) {
      violations.push_back(describe(i, e) + ": no integer \"pid\" and \"tid\"");
      continue;
    }
    const auto ph = e["ph"].get<std::string>();
    const track_key key{e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>()};
    if (ph == "M") {
      const auto name = e.value("name", std::string{});
      const bool named = e.contains("args") && e["args"].contains("name") && e["args"]["name"].is_string();
      if (name == "process_name" && named) named_processes.insert(key.first);
      if (name == "thread_name" && named) named_tracks.insert(key);
      continue;
    }
    if (!e.contains("ts") || !e["ts"].is_number()) {
      violations.push_back(describe(i, e) + ": no numeric \"ts\"");
      continue;
    }
    used_processes.insert(key.first);
    used_tracks.insert(key);
    auto& track = tracks[key];
    const auto ts = to_ns(e["ts"]);
    if (ts < track.last_ts) violations.push_back(describe(i, e) + ": earlier than the event before it on its track");
    track.last_ts = std::max(track.last_ts, ts);
    track.advance(ts);

    if (ph == "X") {
      if (!e.contains("name") || !e["name"].is_string()) {
        violations.push_back(describe(i, e) + ": a complete event without a name");
      }
      if (!e.contains("dur") || !e["dur"].is_number()) {
        violations.push_back(describe(i, e) + ": a complete event without \"dur\"");
        continue;
      }
      const auto end = ts + to_ns(e["dur"]);
      if (end < ts) violations.push_back(describe(i, e) + ": a negative \"dur\"");
      if (!track.open_ends.empty() && end > track.open_ends.back()) {
        violations.push_back(describe(i, e) + ": partly overlaps the slice enclosing it on its track");
      }
      track.open_ends.push_back(end);
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id")) {
        violations.push_back(describe(i, e) + ": a flow event without an id");
        continue;
      }
      if (e.value("bp", std::string{}) != "e") {
        violations.push_back(describe(i, e) + ": a flow event not bound to its enclosing slice (\"bp\": \"e\")");
      }
      if (track.open_ends.empty()) {
        violations.push_back(describe(i, e) + ": a flow event inside no slice of its track");
      }
      auto& ends = flows[e["id"].dump()];
      (ph == "s" ? ends.starts : ends.finishes) += 1;
    } else {
      violations.push_back(describe(i, e) + ": a phase this writer should not emit");
    }
  }

  for (const auto& [id, ends] : flows) {
    if (ends.starts != 1 || ends.finishes != 1) {
      violations.push_back("flow " + id + ": " + std::to_string(ends.starts) + " start(s) and " +
                           std::to_string(ends.finishes) + " finish(es), not one of each");
    }
  }
  for (const auto pid : used_processes) {
    if (!named_processes.count(pid)) violations.push_back("process " + std::to_string(pid) + " has no process_name");
  }
  for (const auto& key : used_tracks) {
    if (!named_tracks.count(key)) {
      violations.push_back("track " + std::to_string(key.first) + "/" + std::to_string(key.second) +
                           " has no thread_name");
    }
  }
  return violations;
}

}  // namespace launchwatch::testing
