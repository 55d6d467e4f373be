// The cells only reports write, beside the table rules every table follows
// (core/interface/text_table.hpp): launch counts with their notes, CSV lines, scope paths and
// fractions for CSV. Pure functions: safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace launchwatch::detail {

/// A launches cell: `12`, `3 (1 dry)`, `5 (2 untimed)`, `3 (1 dry, 1 untimed)`. Dry runs are said
/// wherever there are some (nothing ran, by design); launches without time for any other reason
/// (captured, measurement lost) only in a table that shows times (`timed_table`).
std::string launches_cell(std::size_t launches, std::size_t timed_launches, std::size_t dry_run_launches,
                          bool timed_table);

/// One CSV line (RFC 4180) of `fields`, ending in `\n`: a field holding a comma, a double quote, a
/// carriage return or a line feed is put in double quotes, its double quotes doubled.
std::string csv_line(const std::vector<std::string>& fields);

/// A row's path for a CSV cell: its names joined with `/` (`model/layer 0/attention`).
std::string path_cell(const std::vector<std::string>& path);

/// `part` as a fraction of `whole` (`0.25`), written in the fewest digits that read back as the
/// same double; empty when `whole` is not positive. The share cell of CSV output.
std::string fraction_text(std::int64_t part, std::int64_t whole);

}  // namespace launchwatch::detail
