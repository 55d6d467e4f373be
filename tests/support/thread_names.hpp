// The names of this process's threads, as tools that watch it read them
// (/proc/self/task/TID/comm), for the tests of the names launchwatch gives its own threads
// (core/interface/thread_name.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace launchwatch::testing {

/// Each live thread's name, in no order. Empty where the platform has no /proc.
inline std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator{"/proc/self/task", error}) {
    std::ifstream comm{task.path() / "comm"};
    std::string name;
    if (std::getline(comm, name)) names.push_back(name);
  }
  return names;
}

/// Whether a live thread of this process is named `name`.
inline bool has_thread_named(const std::string& name) {
  const auto names = thread_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// Whether a thread of this process is named `name` within `patience`: a thread names itself as
/// it starts, which can be a moment after the call that started it returned.
inline bool thread_named_within(const std::string& name,
                                std::chrono::milliseconds patience = std::chrono::seconds{10}) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (!has_thread_named(name)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return true;
}

}  // namespace launchwatch::testing
