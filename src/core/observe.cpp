// The observation guards that fill the process-wide observer slot (observation_slot.cpp).

#include <launchwatch/observe.hpp>

#include <launchwatch/launch_path.hpp>

#include <memory>
#include <stdexcept>
#include <utility>

#include "core/observation_slot.hpp"

namespace launchwatch {

launch_observation::launch_observation(std::shared_ptr<launch_observer> observer)
    : observer_{std::move(observer)} {
  if (!observer_) {
    throw std::invalid_argument{
        "launch_observation needs an observer to install, and was given an empty shared_ptr"};
  }
  detail::check_not_in_callback("install a launch_observation");
  detail::observation_stack::get().push(*this);
}

launch_observation::~launch_observation() {
  detail::check_not_in_callback("drop a launch_observation");
  detail::observation_stack::get().remove(*this);
}

bool launch_observation::is_installed(const launch_observer& observer) noexcept {
  if (!launch_path::is_observing()) return false;
  detail::check_not_in_callback("ask whether an observer is installed");
  auto& stack = detail::observation_stack::get();
  detail::reader_lock lock{stack.mutex};
  return stack.installed.get() == &observer;
}

}  // namespace launchwatch
