// A second, private copy of launchwatch's core in a loadable module, as liblaunchwatch_inject.so
// is beside a program that links launchwatch under `launchwatch run`: the module exports only these
// entry points and reported_here's flag accessor (second_copy.map).

#include <launchwatch/launch_path.hpp>

extern "C" {

/// This copy's answer to reported_here_now().
__attribute__((visibility("default"))) bool second_copy_reported_here_now() {
  return launchwatch::launch_path::reported_here_now();
}

/// Calls `ask` inside a reported_here guard of this copy, and returns its answer.
__attribute__((visibility("default"))) bool second_copy_ask_while_reported_here(bool (*ask)()) {
  launchwatch::launch_path::reported_here guard;
  return ask();
}

/// Whether this copy sees an observer installed: a separate copy does not see the program's.
__attribute__((visibility("default"))) bool second_copy_is_observing() {
  return launchwatch::launch_path::is_observing();
}

}  // extern "C"
