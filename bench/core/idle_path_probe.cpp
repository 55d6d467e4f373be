// The launch-path hooks compiled on their own, so check_idle_path.py can read the machine code a
// call site gets and check that an idle launch pays one load and one branch, nothing else.
//
// extern "C" so the functions have names a disassembly can be searched for; each takes what a
// call site would have in registers, so the compiler cannot fold the hook into a constant.

#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <string_view>

extern "C" {

void launchwatch_idle_probe_notify_launch(std::string_view kernel) {
  launchwatch::launch_path::notify_launch(kernel);
}

void launchwatch_idle_probe_notify_launch_info(const launchwatch::launch_info& info) {
  launchwatch::launch_path::notify_launch(info);
}

bool launchwatch_idle_probe_timing_wanted() {
  return launchwatch::launch_path::timing_wanted();
}

}  // extern "C"
