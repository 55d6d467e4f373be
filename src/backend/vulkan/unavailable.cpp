// client::vulkan() in a build without the Vulkan backend: part of launchwatch::core then, so a
// program written for every backend links and runs everywhere and learns at run time that Vulkan is
// absent.
#include <fmt/format.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

namespace launchwatch {

client client::vulkan(int device_index) {
  throw backend_unavailable{fmt::format(
      "launchwatch::client::vulkan({}): this build of launchwatch has no Vulkan backend (it was "
      "configured with LAUNCHWATCH_VULKAN=OFF, or without the Vulkan headers and a GLSL compiler). "
      "apt-get install libvulkan-dev glslang-tools, rebuild with -DLAUNCHWATCH_VULKAN=ON, or use "
      "client::cpu()",
      device_index)};
}

}  // namespace launchwatch
