// What `launchwatch demo` and `launchwatch run` say about the report files they left.
#pragma once

#include <filesystem>
#include <string>

#include <fmt/format.h>

namespace launchwatch::cli {

/// "wrote DIR/trace.json (open in ...), ...": where each file is and what opens it.
inline std::string wrote_report_files(const std::filesystem::path& folder) {
  return fmt::format(
      "wrote {0}/trace.json (open in https://ui.perfetto.dev), {0}/flame.folded (flamegraph.pl, "
      "speedscope) and {0}/summary.json (launchwatch report {0}/summary.json)",
      folder.string());
}

}  // namespace launchwatch::cli
