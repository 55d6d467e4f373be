// The Vulkan functions the backend calls, loaded at run time from libvulkan.so.1.
//
// Why not link the loader: a program built with the Vulkan backend must still start on a machine
// without Vulkan, and there client::vulkan() says what to install (as client::cuda() does without a
// GPU). So nothing here is a Vulkan prototype: every function comes through vkGetInstanceProcAddr
// and vkGetDeviceProcAddr into the tables below.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>
#include <string_view>

namespace launchwatch::detail::vulkan {

#define LAUNCHWATCH_VK_INSTANCE_FUNCTIONS(X)    \
  X(vkDestroyInstance)                          \
  X(vkEnumeratePhysicalDevices)                 \
  X(vkGetPhysicalDeviceProperties)              \
  X(vkGetPhysicalDeviceProperties2)             \
  X(vkGetPhysicalDeviceFeatures2)               \
  X(vkGetPhysicalDeviceQueueFamilyProperties)   \
  X(vkGetPhysicalDeviceMemoryProperties)        \
  X(vkEnumerateDeviceExtensionProperties)       \
  X(vkCreateDevice)                             \
  X(vkGetDeviceProcAddr)

#define LAUNCHWATCH_VK_DEVICE_FUNCTIONS(X) \
  X(vkDestroyDevice)                       \
  X(vkGetDeviceQueue)                      \
  X(vkDeviceWaitIdle)                      \
  X(vkCreateBuffer)                        \
  X(vkDestroyBuffer)                       \
  X(vkGetBufferMemoryRequirements)         \
  X(vkAllocateMemory)                      \
  X(vkFreeMemory)                          \
  X(vkBindBufferMemory)                    \
  X(vkMapMemory)                           \
  X(vkGetBufferDeviceAddress)              \
  X(vkCreateShaderModule)                  \
  X(vkDestroyShaderModule)                 \
  X(vkCreatePipelineLayout)                \
  X(vkDestroyPipelineLayout)               \
  X(vkCreateComputePipelines)              \
  X(vkDestroyPipeline)                     \
  X(vkCreateCommandPool)                   \
  X(vkDestroyCommandPool)                  \
  X(vkAllocateCommandBuffers)              \
  X(vkFreeCommandBuffers)                  \
  X(vkBeginCommandBuffer)                  \
  X(vkEndCommandBuffer)                    \
  X(vkResetCommandBuffer)                  \
  X(vkCmdBindPipeline)                     \
  X(vkCmdPushConstants)                    \
  X(vkCmdDispatch)                         \
  X(vkCmdPipelineBarrier)                  \
  X(vkCmdWriteTimestamp)                   \
  X(vkQueueSubmit)                         \
  X(vkCreateSemaphore)                     \
  X(vkDestroySemaphore)                    \
  X(vkGetSemaphoreCounterValue)            \
  X(vkWaitSemaphores)                      \
  X(vkCreateQueryPool)                     \
  X(vkDestroyQueryPool)                    \
  X(vkResetQueryPool)                      \
  X(vkGetQueryPoolResults)

/// The loader and an instance, opened once per process (never closed: devices live as long).
struct instance_api {
  VkInstance instance = VK_NULL_HANDLE;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  /// Offered when the instance's devices have VK_EXT_calibrated_timestamps; null otherwise.
  PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT vkGetPhysicalDeviceCalibrateableTimeDomainsEXT =
      nullptr;
#define LAUNCHWATCH_VK_DECLARE_(name) PFN_##name name = nullptr;
  LAUNCHWATCH_VK_INSTANCE_FUNCTIONS(LAUNCHWATCH_VK_DECLARE_)
};

/// One device's functions.
struct device_api {
  PFN_vkGetCalibratedTimestampsEXT vkGetCalibratedTimestampsEXT = nullptr;
  LAUNCHWATCH_VK_DEVICE_FUNCTIONS(LAUNCHWATCH_VK_DECLARE_)
#undef LAUNCHWATCH_VK_DECLARE_
};

/// The process's instance. Throws backend_unavailable saying what to install when there is no
/// loader, no driver, or no Vulkan 1.2.
const instance_api& instance();

/// Fills `api` with `device`'s functions. Throws backend_unavailable naming a missing one.
void load_device_functions(const instance_api& from, VkDevice device, device_api& api);

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY" and the like, for messages.
std::string_view result_name(VkResult result) noexcept;

/// Throws device_error saying `call` failed with `result`, unless it succeeded.
void check(VkResult result, std::string_view call);

}  // namespace launchwatch::detail::vulkan
