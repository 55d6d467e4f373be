// The summary JSON reader behind `launchwatch report`, over any bytes: a file either reads or is
// refused with summary_error (nothing else may escape: an escaping exception ends the run as a
// crash), however deep it nests (review finding 21). What reads must render as `launchwatch report`
// renders it, and must write back as a summary that reads back equal.
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/summary_json.hpp>
#include <launchwatch/report/tree.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace launchwatch;
  std::istringstream in{std::string{reinterpret_cast<const char*>(data), size}};
  pass_summary summary;
  try {
    summary = read_summary_json(in, "fuzz.json");
  } catch (const summary_error&) {
    return 0;
  }
  std::ostringstream table;
  write_tree(table, summary);

  std::stringstream again;
  write_summary_json(again, summary);
  if (read_summary_json(again, "rewritten.json") != summary) {
    std::fprintf(stderr, "a summary read from the input does not read back equal once written\n");
    std::abort();
  }
  return 0;
}
