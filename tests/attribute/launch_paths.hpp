// Helpers for tests of scope paths: report a launch as a runtime would, read back each launch's
// path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <launchwatch/launch_path.hpp>
#include <launchwatch/report/pass_record.hpp>

namespace launchwatch::testing {

/// Launches `kernel` the way a runtime reports one (to the installed observer, if any).
inline void launch(std::string_view kernel) {
  launch_info info;
  info.kernel = kernel;
  launch_path::notify_launch(info);
}

/// The scope path of each launch in `pass`, as text ("" outside any scope).
inline std::vector<std::string> launch_paths(const pass_record& pass) {
  std::vector<std::string> paths;
  for (const auto& l : pass.launches) paths.push_back(l.scope ? pass.scope_path_text(*l.scope) : "");
  return paths;
}

}  // namespace launchwatch::testing
