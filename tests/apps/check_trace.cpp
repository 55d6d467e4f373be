// check_trace FILE: applies the Chrome trace rules of docs/design.md §7 (tests/attribute/trace_rules.hpp)
// to a trace file written by the program, printing each violation; exits 1 on any.
#include <fstream>
#include <iostream>
#include <sstream>

#include "trace_rules.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: check_trace TRACE.json\n";
    return 2;
  }
  std::ifstream in{argv[1]};
  if (!in) {
    std::cerr << "check_trace: cannot read " << argv[1] << '\n';
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  const auto violations = launchwatch::testing::chrome_trace_violations(text.str());
  for (const auto& violation : violations) std::cout << "violation: " << violation << '\n';
  std::cout << argv[1] << ": " << (violations.empty() ? "keeps every Chrome trace rule" : "breaks the rules")
            << '\n';
  return violations.empty() ? 0 : 1;
}
