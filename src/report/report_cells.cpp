// The cells only reports write: launch counts with their notes, CSV lines, paths, fractions
// (report_cells.hpp).

#include "report_cells.hpp"

#include <fmt/format.h>

namespace launchwatch::detail {

std::string launches_cell(std::size_t launches, std::size_t timed_launches, std::size_t dry_run_launches,
                          bool timed_table) {
  std::string notes;
  if (dry_run_launches > 0) notes = fmt::format("{} dry", dry_run_launches);
  const auto accounted = timed_launches + dry_run_launches;
  if (timed_table && launches > accounted) {
    notes += fmt::format("{}{} untimed", notes.empty() ? "" : ", ", launches - accounted);
  }
  if (notes.empty()) return std::to_string(launches);
  return fmt::format("{} ({})", launches, notes);
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    const auto& field = fields[i];
    if (field.find_first_of(",\"\r\n") == std::string::npos) {
      line += field;
      continue;
    }
    line += '"';
    for (const char c : field) {
      if (c == '"') line += '"';
      line += c;
    }
    line += '"';
  }
  line += '\n';
  return line;
}

std::string path_cell(const std::vector<std::string>& path) {
  std::string text;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (i > 0) text += '/';
    text += path[i];
  }
  return text;
}

std::string fraction_text(std::int64_t part, std::int64_t whole) {
  if (whole <= 0) return {};
  return fmt::format("{}", static_cast<double>(part) / static_cast<double>(whole));
}

}  // namespace launchwatch::detail
