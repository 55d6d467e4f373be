// The names of this process's threads, as tools that watch it read them
// (/proc/self/task/TID/comm), for the tests of the names launchwatch gives its own threads
// (core/interface/thread_name.hpp).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
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

}  // namespace launchwatch::testing
