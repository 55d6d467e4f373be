// client::vulkan(): the Vulkan backend's entry point.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

#include "backend/vulkan/vulkan_device.hpp"

namespace launchwatch {
namespace {

using namespace detail::vulkan;

/// The devices client::vulkan() opened, by index: one per index for the whole process, as the
/// backend contract asks; never destroyed, since clients may be used by threads still running at
/// exit.
struct opened_devices {
  std::mutex mutex;
  std::map<int, std::shared_ptr<vulkan_device>> by_index;
  static opened_devices& get() {
    static auto* const devices = new opened_devices;
    return *devices;
  }
};

/// Why `physical` cannot run launchwatch's kernels, or empty when it can.
std::string unusable(const instance_api& vk, VkPhysicalDevice physical) {
  VkPhysicalDeviceProperties properties{};
  vk.vkGetPhysicalDeviceProperties(physical, &properties);
  if (properties.apiVersion < VK_API_VERSION_1_2) return "it offers only Vulkan 1.0 or 1.1";
  VkPhysicalDeviceVulkan12Features v12{};
  v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &v12;
  vk.vkGetPhysicalDeviceFeatures2(physical, &features);
  std::vector<std::string> missing;
  if (!v12.bufferDeviceAddress) missing.emplace_back("bufferDeviceAddress");
  if (!v12.timelineSemaphore) missing.emplace_back("timelineSemaphore");
  if (!v12.scalarBlockLayout) missing.emplace_back("scalarBlockLayout");
  if (!v12.hostQueryReset) missing.emplace_back("hostQueryReset");
  if (!features.features.shaderInt64) missing.emplace_back("shaderInt64");
  if (!missing.empty()) return fmt::format("it lacks {}", fmt::join(missing, ", "));
  return {};
}

}  // namespace

client client::vulkan(int device_index) {
  if (device_index < 0) {
    throw std::invalid_argument{fmt::format(
        "launchwatch::client::vulkan({}): a device index counts from 0", device_index)};
  }
  opened_devices& devices = opened_devices::get();
  std::lock_guard lock{devices.mutex};
  auto& slot = devices.by_index[device_index];
  if (!slot) {
    const instance_api& vk = instance();
    std::uint32_t count = 0;
    check(vk.vkEnumeratePhysicalDevices(vk.instance, &count, nullptr), "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> physical(count);
    check(vk.vkEnumeratePhysicalDevices(vk.instance, &count, physical.data()),
          "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> usable;
    std::string refused;
    for (VkPhysicalDevice p : physical) {
      const std::string why = unusable(vk, p);
      if (why.empty()) {
        usable.push_back(p);
        continue;
      }
      VkPhysicalDeviceProperties properties{};
      vk.vkGetPhysicalDeviceProperties(p, &properties);
      refused += fmt::format("; {} was skipped: {}", properties.deviceName, why);
    }
    if (static_cast<std::size_t>(device_index) >= usable.size()) {
      throw backend_unavailable{fmt::format(
          "launchwatch::client::vulkan({}): the Vulkan driver offers {} usable device{}{}{}",
          device_index, usable.size(), usable.size() == 1 ? "" : "s",
          usable.empty() ? "" : fmt::format(" (indices 0 to {})", usable.size() - 1), refused)};
    }
    auto opened = std::make_shared<vulkan_device>(device_index,
                                                  usable[static_cast<std::size_t>(device_index)]);
    detail::start_device_runtime();  // may throw configuration_error: then nothing is cached
    slot = std::move(opened);
  }
  return client{std::static_pointer_cast<detail::device>(slot)};
}

}  // namespace launchwatch

namespace launchwatch::detail::vulkan {

std::shared_ptr<vulkan_device> opened_device(int index) {
  opened_devices& devices = opened_devices::get();
  std::lock_guard lock{devices.mutex};
  const auto found = devices.by_index.find(index);
  return found == devices.by_index.end() ? nullptr : found->second;
}

}  // namespace launchwatch::detail::vulkan
