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

// The guard every launch source puts before issue(): with nothing watching (the path returning
// false), the source submits directly, having paid this and nothing else.
bool launchwatch_idle_probe_watched(const launchwatch::launch_info& info,
                                    launchwatch::launch_path::submitter& source) {
  if (!launchwatch::launch_path::watched()) [[likely]] {
    return false;
  }
  launchwatch::launch_path::issue(info, source);
  return true;
}

}  // extern "C"
