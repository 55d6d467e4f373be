// What a report writer writes, as a string and as lines: what every format's tests read.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include <launchwatch/report/report_writer.hpp>

namespace launchwatch::testing {

/// Writes `input` through `writer` and returns the text.
template <class Input>
std::string written_by(report_writer<Input>& writer, const Input& input) {
  std::ostringstream out;
  writer.write(out, input);
  return out.str();
}

/// `text` split at its line breaks.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace launchwatch::testing
