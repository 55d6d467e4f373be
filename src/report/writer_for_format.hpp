// The one choice between a report's three formats (table, CSV, JSON), behind make_tree_writer,
// make_kernel_table_writer and make_diff_writer.
#pragma once

#include <memory>

#include <launchwatch/report/report_writer.hpp>

namespace launchwatch::detail {

/// The writer `options.format` names, constructed with `options`.
template <class Table, class Csv, class Json, class Options>
std::unique_ptr<report_writer<typename Table::input_type>> writer_for_format(
    const Options& options) {
  switch (options.format) {
    case report_format::csv:
      return std::make_unique<Csv>(options);
    case report_format::json:
      return std::make_unique<Json>(options);
    case report_format::table:
      break;
  }
  return std::make_unique<Table>(options);
}

}  // namespace launchwatch::detail
