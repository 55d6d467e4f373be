// Compares a renderer's output with a golden file in the test binary's LAUNCHWATCH_GOLDEN_DIR
// (tests/report/golden/ for the reports, tests/unit/golden/ for the profiling logger).
//
// Set LAUNCHWATCH_UPDATE_GOLDEN=1 to rewrite the golden files from the current output; review the
// diff before committing it, since a golden file is only as right as the person who read it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace launchwatch::testing {

inline void expect_matches_golden(const std::string& name, const std::string& actual) {
  const auto path = std::filesystem::path{LAUNCHWATCH_GOLDEN_DIR} / name;
  if (std::getenv("LAUNCHWATCH_UPDATE_GOLDEN") != nullptr) {
    std::ofstream out{path, std::ios::binary};
    out << actual;
    ASSERT_TRUE(out.good()) << "could not write golden file " << path;
    return;
  }
  std::ifstream in{path, std::ios::binary};
  ASSERT_TRUE(in.good()) << "golden file " << path
                         << " is missing: run with LAUNCHWATCH_UPDATE_GOLDEN=1 to write it";
  const std::string expected{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  EXPECT_EQ(expected, actual) << "output differs from " << path
                              << " (LAUNCHWATCH_UPDATE_GOLDEN=1 rewrites it)";
}

}  // namespace launchwatch::testing
