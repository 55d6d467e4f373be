// A small RFC 4180 reader, so tests read launchwatch's CSV back the way a spreadsheet or Python's
// csv module would, rather than by splitting on commas.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace launchwatch::testing {

/// The records of `text`: fields split at commas, records at line breaks (LF or CRLF), a quoted
/// field read up to its closing quote with `""` as one quote and commas and line breaks kept.
/// Throws std::invalid_argument for a quote inside an unquoted field or an unclosed quote.
inline std::vector<std::vector<std::string>> read_csv(std::string_view text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;       // inside a quoted field
  bool was_quoted = false;   // the current field was quoted (only a separator may follow)
  bool any = false;          // the current record has begun
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
        was_quoted = true;
      }
      continue;
    }
    if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      was_quoted = false;
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      record.push_back(std::move(field));
      field.clear();
      records.push_back(std::move(record));
      record.clear();
      was_quoted = false;
      any = false;
    } else if (c == '"') {
      if (!field.empty() || was_quoted) throw std::invalid_argument{"a quote inside an unquoted field"};
      quoted = true;
      any = true;
    } else {
      if (was_quoted) throw std::invalid_argument{"text after a quoted field's closing quote"};
      field += c;
      any = true;
    }
  }
  if (quoted) throw std::invalid_argument{"a quoted field is not closed"};
  if (any || !field.empty()) {
    record.push_back(std::move(field));
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace launchwatch::testing
