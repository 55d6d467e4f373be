// Whether the versions fit (versions.hpp).
#include "versions.hpp"

#include <fmt/format.h>

namespace launchwatch::detail::cupti {

std::string describe(const version_numbers& v) {
  return fmt::format(
      "CUPTI API {} (launchwatch was built against {}), CUDA driver {}.{}, CUDA runtime {}.{}",
      v.cupti_loaded, v.cupti_built, v.driver / 1000, v.driver % 1000 / 10, v.runtime / 1000,
      v.runtime % 1000 / 10);
}

std::optional<std::string> versions_misfit(const version_numbers& v) {
  if (v.cupti_loaded < v.cupti_built) {
    return fmt::format(
        "the CUPTI library loaded is older than the one launchwatch was built against ({}). Put "
        "the toolkit's libcupti first on the library path.",
        describe(v));
  }
  if (v.driver != 0 && v.runtime != 0 && v.driver < v.runtime) {
    return fmt::format(
        "the CUDA driver is older than the CUDA runtime ({}). Update the driver, or run with the "
        "runtime it supports.",
        describe(v));
  }
  return std::nullopt;
}

}  // namespace launchwatch::detail::cupti
