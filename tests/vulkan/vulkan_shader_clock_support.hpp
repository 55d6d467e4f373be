// What the shader-clock tests share: the device client::vulkan() opened, and whether it offers
// its shader clock (Mesa's lavapipe does: its absence there is a failure, not a skip).
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include <launchwatch/runtime/client.hpp>

#include "backend/vulkan/vulkan_device.hpp"

namespace launchwatch::testing {

/// Device 0, opened; null with the reason in `why` when it cannot time with its shader clock.
inline std::shared_ptr<detail::vulkan::vulkan_device> shader_clock_device(std::string& why) {
  const client opened = client::vulkan();
  auto device = detail::vulkan::opened_device(0);
  if (device == nullptr) {
    why = "client::vulkan() opened no device 0";
    return nullptr;
  }
  if (!device->shader_clock_offered()) {
    why = device->name() + " offers no VK_KHR_shader_clock device scope with 64-bit atomics";
    return nullptr;
  }
  return device;
}

/// Skips unless device 0 offers its shader clock; fails instead on lavapipe, which does.
#define LAUNCHWATCH_NEED_SHADER_CLOCK(device)                                            \
  do {                                                                                   \
    std::string why;                                                                     \
    device = ::launchwatch::testing::shader_clock_device(why);                           \
    if (device == nullptr) {                                                             \
      if (client::vulkan().device_name().find("llvmpipe") != std::string::npos) {        \
        FAIL() << "lavapipe offers its shader clock, and here it was not used: " << why; \
      }                                                                                  \
      GTEST_SKIP() << why;                                                               \
    }                                                                                    \
  } while (false)

}  // namespace launchwatch::testing
