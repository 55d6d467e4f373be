#include "backend/vulkan/vulkan_api.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail::vulkan {
namespace {

constexpr std::string_view what_to_install =
    "install a Vulkan loader and driver (Debian: apt-get install libvulkan1 mesa-vulkan-drivers for "
    "Mesa's lavapipe on the CPU, or your GPU vendor's Vulkan driver; VK_DRIVER_FILES names a "
    "driver's JSON file when the loader does not find it), or use client::cpu()";

instance_api open_instance() {
  instance_api api;
  void* loader = ::dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (loader == nullptr) {
    throw backend_unavailable{fmt::format(
        "launchwatch::client::vulkan: no Vulkan loader (libvulkan.so.1 could not be opened: {}); {}",
        ::dlerror(), what_to_install)};
  }
  api.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(loader, "vkGetInstanceProcAddr"));
  if (api.vkGetInstanceProcAddr == nullptr) {
    throw backend_unavailable{"launchwatch::client::vulkan: libvulkan.so.1 has no "
                              "vkGetInstanceProcAddr; reinstall the Vulkan loader (libvulkan1)"};
  }
  auto enumerate_version = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      api.vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion"));
  std::uint32_t version = VK_API_VERSION_1_0;
  if (enumerate_version != nullptr) (void)enumerate_version(&version);
  if (version < VK_API_VERSION_1_2) {
    throw backend_unavailable{fmt::format(
        "launchwatch::client::vulkan: the Vulkan loader offers version {}.{}, and launchwatch needs "
        "1.2 (buffer device addresses, timeline semaphores); update libvulkan1",
        VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version))};
  }
  auto create = reinterpret_cast<PFN_vkCreateInstance>(
      api.vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
  VkApplicationInfo application{};
  application.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  application.pApplicationName = "launchwatch";
  application.pEngineName = "launchwatch";
  application.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &application;
  const VkResult created = create(&info, nullptr, &api.instance);
  if (created == VK_ERROR_INCOMPATIBLE_DRIVER) {
    throw backend_unavailable{fmt::format(
        "launchwatch::client::vulkan: the Vulkan loader found no driver (vkCreateInstance: "
        "VK_ERROR_INCOMPATIBLE_DRIVER); {}",
        what_to_install)};
  }
  if (created != VK_SUCCESS) {
    throw backend_unavailable{fmt::format(
        "launchwatch::client::vulkan: vkCreateInstance failed with {}; {}", result_name(created),
        what_to_install)};
  }
#define LAUNCHWATCH_VK_LOAD_(name) \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(api.instance, #name));
  LAUNCHWATCH_VK_INSTANCE_FUNCTIONS(LAUNCHWATCH_VK_LOAD_)
#undef LAUNCHWATCH_VK_LOAD_
  api.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT =
      reinterpret_cast<PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT>(api.vkGetInstanceProcAddr(
          api.instance, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT"));
  return api;
}

}  // namespace

const instance_api& instance() {
  // Opened once; a failure is not cached, so installing a driver and retrying works, and every
  // attempt says the same thing.
  static std::mutex mutex;
  static instance_api* opened = nullptr;
  std::lock_guard lock{mutex};
  if (opened == nullptr) opened = new instance_api{open_instance()};
  return *opened;
}

void load_device_functions(const instance_api& from, VkDevice device, device_api& api) {
#define LAUNCHWATCH_VK_LOAD_(name)                                                          \
  api.name = reinterpret_cast<PFN_##name>(from.vkGetDeviceProcAddr(device, #name));         \
  if (api.name == nullptr) {                                                                \
    throw backend_unavailable{"launchwatch::client::vulkan: the Vulkan driver has no " #name \
                              "; update the driver"};                                       \
  }
  LAUNCHWATCH_VK_DEVICE_FUNCTIONS(LAUNCHWATCH_VK_LOAD_)
#undef LAUNCHWATCH_VK_LOAD_
  api.vkGetCalibratedTimestampsEXT = reinterpret_cast<PFN_vkGetCalibratedTimestampsEXT>(
      from.vkGetDeviceProcAddr(device, "vkGetCalibratedTimestampsEXT"));
}

std::string_view result_name(VkResult result) noexcept {
  switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "an unnamed VkResult";
  }
}

void check(VkResult result, std::string_view call) {
  if (result == VK_SUCCESS) [[likely]] return;
  throw device_error{fmt::format("launchwatch: {} failed on Vulkan with {} ({})", call,
                                 result_name(result), static_cast<int>(result))};
}

}  // namespace launchwatch::detail::vulkan
