// Whether the versions fit (versions.hpp).
#include "versions.hpp"

#include <fmt/format.h>

namespace launchwatch::detail::cuda_bridge {

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
  // By major version: within one, a driver runs newer runtimes (minor version compatibility).
  if (v.driver != 0 && v.runtime != 0 && v.driver / 1000 < v.runtime / 1000) {
    return fmt::format(
        "the CUDA driver is older than the CUDA runtime's major version ({}). Update the driver to "
        "one of CUDA {} or later, or use a launchwatch and program built with the CUDA the driver "
        "supports.",
        describe(v), v.runtime / 1000);
  }
  return std::nullopt;
}

}  // namespace launchwatch::detail::cuda_bridge
