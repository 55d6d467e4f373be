// What a launch source needs besides issue() (launch_path.hpp): which observation a late event
// belongs to, delivering a replayed graph node under behaviour 6, whether this thread is inside an
// observer, and the listener told when watched() changes. reported_here is reported_here.cpp's.

#include <launchwatch/launch_path.hpp>

#include "core/launch_watch_writer.hpp"
#include "core/observation_slot.hpp"

namespace launchwatch {
namespace detail {

struct observation_refs {
  static launch_path::observation_ref make(std::uint64_t serial) noexcept {
    launch_path::observation_ref ref;
    ref.serial_ = serial;
    return ref;
  }
  static std::uint64_t serial(launch_path::observation_ref ref) noexcept { return ref.serial_; }
};

}  // namespace detail

namespace launch_path {

observation_ref current_observation() noexcept {
  if (!is_observing()) return {};
  detail::check_not_in_callback("ask which observation is installed");
  auto& stack = detail::observation_stack::get();
  detail::reader_lock lock{stack.mutex};
  return detail::observation_refs::make(stack.installed_serial);
}

bool deliver_replayed(observation_ref to, const replayed_node& node) {
  if (to.empty() || !is_observing()) return false;
  detail::check_not_in_callback("deliver a replayed graph node");
  auto& stack = detail::observation_stack::get();
  detail::reader_lock lock{stack.mutex};
  // The serial, not the observer: an observer installed again, or by another observation, is not
  // the observation that saw the capture's launches.
  if (!stack.installed || stack.installed_serial != detail::observation_refs::serial(to)) {
    return false;
  }
  auto* wants = dynamic_cast<graph_replay_observer*>(stack.installed.get());
  if (wants == nullptr) return false;
  detail::call_observer("replayed", node.kernel, [&] { wants->replayed(node); });
  return true;
}

bool inside_observer() noexcept { return detail::callback_depth > 0; }

void check_outside_observer(const char* what) { detail::check_not_in_callback(what); }

void on_watched_change(void (*listener)() noexcept) noexcept {
  detail::launch_watch_writer::listen(listener);
}

}  // namespace launch_path
}  // namespace launchwatch
