// A scope entered and left, compiled on its own, so bench/core/check_idle_path.py can read the
// machine code a caller gets and check that, with no attribution alive, a scope costs one load of
// the attributing flag and one branch: the destructor's check of the token folds into the
// constructor's branch, and nothing else is built.
//
// extern "C" so the function has a name a disassembly can be searched for; the name arrives in
// registers, as a caller's would, so the compiler cannot fold the scope into a constant.

#include <launchwatch/attribute/scope.hpp>

#include <string_view>

extern "C" {

void launchwatch_idle_probe_scope(std::string_view name) {
  const launchwatch::scope entered{name};
}

}  // extern "C"
