// Reading a launch's measurement.

#include <launchwatch/profile.hpp>

#include <stdexcept>

namespace launchwatch {

std::optional<profile_ticks> profile_duration::resolve() && {
  if (!resolver_) {
    throw std::logic_error{
        "profile_duration::resolve: this measurement was already read (or moved from); a "
        "measurement is read once, so keep the profile_ticks the first read returned"};
  }
  return resolver_.call_once();
}

}  // namespace launchwatch
