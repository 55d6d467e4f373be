// The Vulkan device: opening it, its memory, its pipelines.
#include "backend/vulkan/vulkan_device.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "backend/vulkan/environment.hpp"
#include "backend/vulkan/own_shaders.hpp"
#include "backend/vulkan/vulkan_stream.hpp"
#include "core/interface/diagnostics.hpp"

namespace launchwatch::detail::vulkan {
namespace {

bool has_extension(const std::vector<VkExtensionProperties>& offered, const char* name) {
  return std::any_of(offered.begin(), offered.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// vulkan_device

vulkan_device::vulkan_device(int index, VkPhysicalDevice physical)
    : index_{index}, physical_{physical} {
  const instance_api& vk = instance();
  VkPhysicalDeviceProperties properties{};
  vk.vkGetPhysicalDeviceProperties(physical_, &properties);
  name_ = properties.deviceName;
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  VkPhysicalDeviceProperties2 properties2{};
  properties2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties2.pNext = &driver;
  vk.vkGetPhysicalDeviceProperties2(physical_, &properties2);
  flush_after_stamps_ = driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE;
  const auto& l = properties.limits;
  limits_.max_units_per_cube = l.maxComputeWorkGroupInvocations;
  limits_.max_cube_dim = cube_dim{l.maxComputeWorkGroupSize[0], l.maxComputeWorkGroupSize[1],
                                  l.maxComputeWorkGroupSize[2]};
  limits_.max_cube_count = cube_count{l.maxComputeWorkGroupCount[0], l.maxComputeWorkGroupCount[1],
                                      l.maxComputeWorkGroupCount[2]};
  push_bytes_ = std::min<std::uint32_t>(l.maxPushConstantsSize, 256);

  std::uint32_t family_count = 0;
  vk.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vk.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, families.data());
  std::uint32_t family = family_count;
  for (std::uint32_t f = 0; f < family_count; ++f) {
    if ((families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0 && families[f].timestampValidBits > 0) {
      family = f;
      break;
    }
  }
  if (family == family_count) {
    throw backend_unavailable{fmt::format(
        "launchwatch::client::vulkan({}): {} has no compute queue with timestamps", index, name_)};
  }
  queue_family_ = family;
  // Every queue of the family: streams are spread over them in turn (16 on an H200, 1 on lavapipe).
  const std::uint32_t queue_count = families[family].queueCount;

  std::uint32_t extension_count = 0;
  vk.vkEnumerateDeviceExtensionProperties(physical_, nullptr, &extension_count, nullptr);
  std::vector<VkExtensionProperties> offered(extension_count);
  vk.vkEnumerateDeviceExtensionProperties(physical_, nullptr, &extension_count, offered.data());
  std::vector<const char*> extensions;
  bool calibrated = false;
  if (has_extension(offered, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) &&
      vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT != nullptr) {
    std::uint32_t domain_count = 0;
    vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(physical_, &domain_count, nullptr);
    std::vector<VkTimeDomainEXT> domains(domain_count);
    vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(physical_, &domain_count, domains.data());
    const auto offers = [&](VkTimeDomainEXT d) {
      return std::find(domains.begin(), domains.end(), d) != domains.end();
    };
    calibrated = offers(VK_TIME_DOMAIN_DEVICE_EXT) && offers(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT);
    if (calibrated) extensions.push_back(VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
  }

  VkPhysicalDeviceShaderClockFeaturesKHR clock_features{};
  clock_features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR;
  VkPhysicalDeviceVulkan12Features v12{};
  v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  const bool shader_clock = has_extension(offered, VK_KHR_SHADER_CLOCK_EXTENSION_NAME);
  if (shader_clock) v12.pNext = &clock_features;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &v12;
  vk.vkGetPhysicalDeviceFeatures2(physical_, &features);
  // What every kernel needs (launchwatch.glsl); the caller checked these before choosing it.
  VkPhysicalDeviceShaderClockFeaturesKHR clock_enabled{};
  clock_enabled.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR;
  clock_enabled.shaderDeviceClock = clock_features.shaderDeviceClock;
  clock_enabled.shaderSubgroupClock = clock_features.shaderSubgroupClock;
  VkPhysicalDeviceVulkan12Features v12_enabled{};
  v12_enabled.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  v12_enabled.bufferDeviceAddress = VK_TRUE;
  v12_enabled.timelineSemaphore = VK_TRUE;
  v12_enabled.scalarBlockLayout = VK_TRUE;
  v12_enabled.hostQueryReset = VK_TRUE;
  // Timed launches fold their stamps with 64-bit atomics (launchwatch.glsl's timed entry).
  v12_enabled.shaderBufferInt64Atomics = v12.shaderBufferInt64Atomics;
  if (shader_clock) {
    extensions.push_back(VK_KHR_SHADER_CLOCK_EXTENSION_NAME);
    v12_enabled.pNext = &clock_enabled;
  }
  VkPhysicalDeviceFeatures2 enabled{};
  enabled.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  enabled.pNext = &v12_enabled;
  enabled.features.shaderInt64 = VK_TRUE;

  std::vector<float> priorities(queue_count, 1.0f);
  VkDeviceQueueCreateInfo queue_info{};
  queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue_info.queueFamilyIndex = family;
  queue_info.queueCount = queue_count;
  queue_info.pQueuePriorities = priorities.data();
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.pNext = &enabled;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  const VkResult created = vk.vkCreateDevice(physical_, &info, nullptr, &device_);
  if (created != VK_SUCCESS) {
    throw backend_unavailable{fmt::format(
        "launchwatch::client::vulkan({}): vkCreateDevice failed on {} with {}", index, name_,
        result_name(created))};
  }
  load_device_functions(vk, device_, api_);
  for (std::uint32_t q = 0; q < queue_count; ++q) {
    auto slot = std::make_unique<queue_slot>();
    api_.vkGetDeviceQueue(device_, family, q, &slot->queue);
    queues_.push_back(std::move(slot));
  }

  VkPhysicalDeviceMemoryProperties memory{};
  vk.vkGetPhysicalDeviceMemoryProperties(physical_, &memory);
  constexpr VkMemoryPropertyFlags mappable =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (const bool local : {true, false}) {
    for (std::uint32_t t = 0; t < memory.memoryTypeCount; ++t) {
      const auto flags = memory.memoryTypes[t].propertyFlags;
      const bool is_local = (flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
      if ((flags & mappable) == mappable && is_local == local) memory_types_.push_back(t);
    }
  }
  for (const bool cached : {true, false}) {
    for (const std::uint32_t t : memory_types_) {
      const bool is_cached =
          (memory.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) != 0;
      if (is_cached == cached) readback_types_.push_back(t);
    }
  }

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_};
  VkPipelineLayoutCreateInfo layout_info{};
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &range;
  check(api_.vkCreatePipelineLayout(device_, &layout_info, nullptr, &layout_),
        "vkCreatePipelineLayout");

  // LAUNCHWATCH_VULKAN_TIMESTAMPS is read here, once per device; a bad value throws before the
  // device is handed out.
  const std::uint32_t pairs = vulkan_timestamps_from_environment().value_or(default_vulkan_timestamp_pairs);
  clock_slot_count_ = vulkan_clock_slots_from_environment().value_or(default_vulkan_clock_slots);
  grid_overhead_ = vulkan_grid_overhead_from_environment();
  timestamp_valid_bits_ = families[family].timestampValidBits;
  if (calibrated && api_.vkGetCalibratedTimestampsEXT != nullptr) {
    clock_ = std::make_unique<device_clock>(api_, device_, double{properties.limits.timestampPeriod});
    slots_ = std::make_unique<timing_slots>(api_, device_, pairs,
                                            families[family].timestampValidBits);
    shader_clock_offered_ = shader_clock && clock_features.shaderDeviceClock &&
                            v12.shaderBufferInt64Atomics && clock_slot_count_ > 0;
    // Mesa's llvmpipe (22.3) returns the clock's low 32 bits and a high word of zero: its stamps
    // wrap every 4.3 s.
    narrow_clock_ = driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE;
  } else {
    diagnostics().warn(
        "launchwatch: Vulkan device {} ({}) offers no VK_EXT_calibrated_timestamps with "
        "CLOCK_MONOTONIC, so its timestamps cannot be placed on the host's clock: every launch on "
        "it is timed `system` (host wall time around a blocking submit)",
        index, name_);
  }
}

vulkan_device::~vulkan_device() {
  if (device_ == VK_NULL_HANDLE) return;
  (void)api_.vkDeviceWaitIdle(device_);
  shader_clock_.reset();
  shader_slots_.reset();
  slots_.reset();
  for (auto& [key, pipeline] : pipelines_) api_.vkDestroyPipeline(device_, pipeline, nullptr);
  for (auto& [code, module] : modules_) api_.vkDestroyShaderModule(device_, module, nullptr);
  for (auto& [address, buffer] : buffers_) destroy(buffer);
  if (layout_ != VK_NULL_HANDLE) api_.vkDestroyPipelineLayout(device_, layout_, nullptr);
  api_.vkDestroyDevice(device_, nullptr);
}

bool vulkan_device::shader_timing(queue_slot& queue) {
  const int state = shader_timing_state_.load(std::memory_order_acquire);
  if (state != 0) [[likely]]
    return state == 1;
  std::lock_guard lock{shader_timing_mutex_};
  if (const int made = shader_timing_state_.load(std::memory_order_relaxed); made != 0) {
    return made == 1;
  }
  if (!shader_clock_offered_) {
    shader_timing_state_.store(2, std::memory_order_release);
    return false;
  }
  try {
    shader_slots_ = std::make_unique<clock_slots>(*this, clock_slot_count_);
    fold_pipeline_ =
        pipeline(own::fold_clock_slots, false, cube_dim{64}, "launchwatch timing fold");
    shader_clock_ = std::make_unique<shader_clock>(*this, narrow_clock_, grid_overhead_);
    shader_clock_->start(queue);
  } catch (const std::exception& why) {
    shader_clock_.reset();
    shader_slots_.reset();
    diagnostics().warn(
        "launchwatch: Vulkan device {} ({}) offers its shader clock, but timing by it could not "
        "be set up ({}); its launches are timed with timestamp queries instead",
        index_, name_, why.what());
    shader_timing_state_.store(2, std::memory_order_release);
    return false;
  }
  shader_timing_state_.store(1, std::memory_order_release);
  return true;
}

timing_counts vulkan_device::timed_counts() const noexcept {
  const auto count = [&](timed_by how) {
    return timed_by_[static_cast<std::size_t>(how)].load(std::memory_order_relaxed);
  };
  return timing_counts{count(timed_by::shader_clock), count(timed_by::timestamps),
                       count(timed_by::system)};
}

mapped_buffer vulkan_device::create_buffer(std::size_t bytes, memory_use use) {
  mapped_buffer made;
  made.bytes = bytes;
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(api_.vkCreateBuffer(device_, &info, nullptr, &made.buffer), "vkCreateBuffer");
  VkMemoryRequirements needs{};
  api_.vkGetBufferMemoryRequirements(device_, made.buffer, &needs);
  VkMemoryAllocateFlagsInfo flags{};
  flags.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO;
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkResult last = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  // Device-local and mappable first (lavapipe's only kind; the H200's resizable BAR), then any
  // mappable memory: copies are then memcpy, and reads need no staging buffer.
  for (const std::uint32_t type : use == memory_use::readback ? readback_types_ : memory_types_) {
    if ((needs.memoryTypeBits & (1u << type)) == 0) continue;
    VkMemoryAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    allocate.pNext = &flags;
    allocate.allocationSize = needs.size;
    allocate.memoryTypeIndex = type;
    last = api_.vkAllocateMemory(device_, &allocate, nullptr, &made.memory);
    if (last == VK_SUCCESS) break;
    made.memory = VK_NULL_HANDLE;
  }
  if (made.memory == VK_NULL_HANDLE) {
    api_.vkDestroyBuffer(device_, made.buffer, nullptr);
    throw device_error{fmt::format(
        "launchwatch: no host-visible memory left for {} bytes on Vulkan device {} ({}): {}", bytes,
        index_, name_, result_name(last))};
  }
  void* mapped = nullptr;
  VkResult status = api_.vkBindBufferMemory(device_, made.buffer, made.memory, 0);
  if (status == VK_SUCCESS) status = api_.vkMapMemory(device_, made.memory, 0, VK_WHOLE_SIZE, 0, &mapped);
  if (status != VK_SUCCESS) {
    destroy(made);
    check(status, "vkBindBufferMemory/vkMapMemory");
  }
  made.mapped = static_cast<std::byte*>(mapped);
  VkBufferDeviceAddressInfo address{};
  address.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO;
  address.buffer = made.buffer;
  made.address = api_.vkGetBufferDeviceAddress(device_, &address);
  return made;
}

void vulkan_device::destroy(mapped_buffer& buffer) noexcept {
  if (buffer.buffer != VK_NULL_HANDLE) api_.vkDestroyBuffer(device_, buffer.buffer, nullptr);
  if (buffer.memory != VK_NULL_HANDLE) api_.vkFreeMemory(device_, buffer.memory, nullptr);
  buffer = mapped_buffer{};
}

void* vulkan_device::allocate(std::size_t bytes, stream&) {
  mapped_buffer made = create_buffer(bytes);
  std::lock_guard lock{buffers_mutex_};
  buffers_.emplace(made.address, made);
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(made.address));
}

void vulkan_device::deallocate(void* memory, std::size_t, std::span<const stream_point> after) noexcept {
  // The launches that used the memory may not have run (or been submitted): wait for them, which
  // submits what they are batched with.
  for (const auto& p : after) p.on->wait(p.point);
  mapped_buffer found;
  {
    std::lock_guard lock{buffers_mutex_};
    const auto it = buffers_.find(reinterpret_cast<std::uintptr_t>(memory));
    if (it == buffers_.end()) return;
    found = it->second;
    buffers_.erase(it);
  }
  destroy(found);
}

std::byte* vulkan_device::host_address(const void* device_address, std::size_t bytes,
                                       std::string_view what) {
  const auto address = static_cast<VkDeviceAddress>(reinterpret_cast<std::uintptr_t>(device_address));
  std::lock_guard lock{buffers_mutex_};
  auto it = buffers_.upper_bound(address);
  if (it != buffers_.begin()) {
    --it;
    const auto& b = it->second;
    if (address >= b.address && address - b.address + bytes <= b.bytes) {
      return b.mapped + (address - b.address);
    }
  }
  throw invalid_launch{fmt::format("launchwatch: {} of {} bytes at device address {:#x} is outside "
                                   "every buffer of Vulkan device {}",
                                   what, bytes, address, index_)};
}

void vulkan_device::zero(void* memory, std::size_t bytes, stream&) {
  std::memset(host_address(memory, bytes, "zeroing"), 0, bytes);
}

void vulkan_device::copy_to_device(void* destination, const void* source, std::size_t bytes,
                                   stream&) {
  std::memcpy(host_address(destination, bytes, "a copy to the device"), source, bytes);
}

void vulkan_device::copy_to_host(void* destination, const void* source, std::size_t bytes, stream&) {
  std::memcpy(destination, host_address(source, bytes, "a copy to the host"), bytes);
}

std::shared_ptr<stream> vulkan_device::create_stream() {
  return std::make_shared<vulkan_stream>(shared_from_this());
}

VkPipeline vulkan_device::pipeline(const vulkan_shader& shader, bool ring, cube_dim dim,
                                   std::string_view kernel, bool timed) {
  const std::span<const std::uint32_t> code =
      timed ? (ring ? shader.timed_ring : shader.timed_push) : (ring ? shader.ring : shader.push);
  const auto key = std::tuple{code.data(), dim.x, dim.y, dim.z};
  {
    std::shared_lock lock{pipelines_mutex_};
    const auto it = pipelines_.find(key);
    if (it != pipelines_.end()) return it->second;
  }
  std::unique_lock lock{pipelines_mutex_};
  if (const auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  VkShaderModule& module = modules_[code.data()];
  if (module == VK_NULL_HANDLE) {
    VkShaderModuleCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    info.codeSize = code.size_bytes();
    info.pCode = code.data();
    const VkResult made = api_.vkCreateShaderModule(device_, &info, nullptr, &module);
    if (made != VK_SUCCESS) {
      module = VK_NULL_HANDLE;
      throw invalid_launch{launch_rejected(
          kernel, *this,
          fmt::format("its shader {} was refused by vkCreateShaderModule ({}); rebuild it with "
                      "launchwatch_vulkan_shaders()",
                      shader.source, result_name(made)))};
    }
  }
  // Constants 0-2: the cube's size. 3 and 4, read by a timed entry only (launchwatch.glsl): the
  // timing slots' address and whether the clock is narrow; both fixed for the device's life, so a
  // pipeline is still found by its code and cube size.
  struct {
    std::uint32_t x, y, z;
    VkBool32 narrow;
    VkDeviceAddress slots;
  } constants{dim.x, dim.y, dim.z, narrow_clock_, timed ? shader_slots_->address() : 0};
  const VkSpecializationMapEntry entries[5] = {
      {0, offsetof(decltype(constants), x), 4},
      {1, offsetof(decltype(constants), y), 4},
      {2, offsetof(decltype(constants), z), 4},
      {3, offsetof(decltype(constants), slots), sizeof(VkDeviceAddress)},
      {4, offsetof(decltype(constants), narrow), sizeof(VkBool32)}};
  VkSpecializationInfo specialization{timed ? 5u : 3u, entries, sizeof constants, &constants};
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &specialization;
  info.layout = layout_;
  VkPipeline made = VK_NULL_HANDLE;
  const VkResult status =
      api_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, nullptr, &made);
  if (status != VK_SUCCESS) {
    throw invalid_launch{launch_rejected(
        kernel, *this,
        fmt::format("a pipeline of its shader {} with cubes of {}x{}x{} could not be created ({}); "
                    "try smaller cubes",
                    shader.source, dim.x, dim.y, dim.z, result_name(status)))};
  }
  pipelines_.emplace(key, made);
  return made;
}

}  // namespace launchwatch::detail::vulkan
