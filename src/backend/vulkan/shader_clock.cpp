// The shader clock's calibration probes: recorded once, submitted on the timed streams' queues,
// folded into the calibration when they have run.
#include "backend/vulkan/shader_clock.hpp"

#include <array>
#include <cstring>
#include <limits>
#include <thread>

#include "backend/vulkan/commands.hpp"
#include "backend/vulkan/own_shaders.hpp"
#include "backend/vulkan/vulkan_device.hpp"

namespace launchwatch::detail::vulkan {
namespace {

/// The push constants of the probe: launchwatch.glsl's launch header, then the readings' address.
struct probe_push {
  VkDeviceAddress failure;
  std::uint32_t index;
  std::uint32_t timing_slot;
  VkDeviceAddress readings;
};

constexpr std::chrono::seconds reanchor_after{1};

std::int64_t steady_ns() {
  return std::chrono::steady_clock::now().time_since_epoch().count();
}

}  // namespace

shader_clock::shader_clock(vulkan_device& device, bool narrow,
                           std::optional<std::chrono::nanoseconds> overhead)
    : device_{device}, narrow_{narrow}, overhead_override_{overhead}, calibration_{narrow} {
  const device_api& api = device_.api();
  const VkDevice handle = device_.handle();
  const std::uint32_t bits = device_.timestamp_valid_bits();
  stamp_mask_ = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  // Made first, so a refused probe shader leaves nothing to undo.
  pipeline_ = device_.pipeline(own::clock_probe, false, cube_dim{1}, "launchwatch clock probe");
  struct undo_on_throw {
    shader_clock* self;
    bool done = false;
    ~undo_on_throw() {
      if (!done) self->release_resources();
    }
  } undo{this};
  readings_ = device_.create_buffer(2 * sizeof(std::uint64_t), memory_use::readback);
  VkCommandPoolCreateInfo pool{};
  pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool.queueFamilyIndex = device_.queue_family();
  check(api.vkCreateCommandPool(handle, &pool, nullptr, &pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo allocate{};
  allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  allocate.commandPool = pool_;
  allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate.commandBufferCount = 1;
  check(api.vkAllocateCommandBuffers(handle, &allocate, &commands_), "vkAllocateCommandBuffers");
  VkQueryPoolCreateInfo queries{};
  queries.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  queries.queryType = VK_QUERY_TYPE_TIMESTAMP;
  queries.queryCount = 2;
  check(api.vkCreateQueryPool(handle, &queries, nullptr, &queries_), "vkCreateQueryPool");
  VkSemaphoreTypeCreateInfo type{};
  type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo semaphore{};
  semaphore.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  semaphore.pNext = &type;
  check(api.vkCreateSemaphore(handle, &semaphore, nullptr, &done_), "vkCreateSemaphore");

  // Recorded once and submitted again for every probe: timestamp, dispatch, timestamp, each after a
  // barrier, as a timed launch's queries are (vulkan_stream.cpp).
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  check(api.vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer");
  const auto order = [&] { record_barrier(api, commands_, visible_to::shaders); };
  order();
  api.vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_, 0);
  if (device_.flush_after_stamps()) order();
  api.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  const probe_push push{readings_.address, 0, 0, readings_.address};
  api.vkCmdPushConstants(commands_, device_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push,
                         &push);
  api.vkCmdDispatch(commands_, 1, 1, 1);
  order();
  api.vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_, 1);
  if (device_.flush_after_stamps()) order();
  record_barrier(api, commands_, visible_to::host);
  check(api.vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
  undo.done = true;
}

shader_clock::~shader_clock() {
  // The device waited for its queues to go idle before destroying this: no probe is in flight.
  release_resources();
}

void shader_clock::release_resources() noexcept {
  const device_api& api = device_.api();
  const VkDevice handle = device_.handle();
  if (done_ != VK_NULL_HANDLE) api.vkDestroySemaphore(handle, done_, nullptr);
  if (queries_ != VK_NULL_HANDLE) api.vkDestroyQueryPool(handle, queries_, nullptr);
  if (pool_ != VK_NULL_HANDLE) api.vkDestroyCommandPool(handle, pool_, nullptr);
  done_ = VK_NULL_HANDLE;
  queries_ = VK_NULL_HANDLE;
  pool_ = VK_NULL_HANDLE;
  device_.destroy(readings_);
}

void shader_clock::submit_probe(queue_slot& queue) {
  const device_api& api = device_.api();
  api.vkResetQueryPool(device_.handle(), queries_, 0, 2);
  const std::uint64_t value = probes_ + 1;
  submit_signalling(api, queue, commands_, done_, value,
                    "vkQueueSubmit (the shader clock's calibration probe)");
  probes_ = value;
  in_flight_ = true;
}

bool shader_clock::collect_probe(bool wait) {
  if (!in_flight_) return false;
  const device_api& api = device_.api();
  const VkDevice handle = device_.handle();
  if (wait) {
    VkSemaphoreWaitInfo info{};
    info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    info.semaphoreCount = 1;
    info.pSemaphores = &done_;
    info.pValues = &probes_;
    check(api.vkWaitSemaphores(handle, &info, std::numeric_limits<std::uint64_t>::max()),
          "vkWaitSemaphores (the shader clock's calibration probe)");
  } else {
    std::uint64_t reached = 0;
    check(api.vkGetSemaphoreCounterValue(handle, done_, &reached), "vkGetSemaphoreCounterValue");
    if (reached < probes_) return false;
  }
  in_flight_ = false;
  std::array<std::uint64_t, 2> stamps{};
  check(api.vkGetQueryPoolResults(handle, queries_, 0, 2, sizeof stamps, stamps.data(),
                                  sizeof stamps[0],
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults (the shader clock's calibration probe)");
  // The first probe compiles the probe's shader (lavapipe compiles at the first dispatch, tens of
  // milliseconds between its timestamps): it only warms the pipeline.
  if (probes_ == 1) return true;
  std::array<std::uint64_t, 2> readings{};
  std::memcpy(readings.data(), readings_.mapped, sizeof readings);
  // Both timestamps through one anchor of the device clock.
  const device_clock::mapping through = device_.clock()->current_mapping();
  calibration_.add(clock_calibration::probe{device_clock::map(through, stamps[0] & stamp_mask_),
                                            device_clock::map(through, stamps[1] & stamp_mask_),
                                            readings[0], readings[1]});
  return true;
}

void shader_clock::calibrate(queue_slot& queue) {
  while (!calibration_.ready()) {
    if (!in_flight_) {
      if (calibration_.anchors() >= 1) {
        // The first rate needs two anchors apart: each is uncertain by the width of a timestamp
        // pair around a dispatch (microseconds on a GPU; more on a busy CPU device).
        const std::int64_t due =
            calibration_.first_anchor_ns() +
            std::chrono::nanoseconds{clock_calibration::first_rate_span}.count();
        const std::int64_t now = steady_ns();
        if (now < due) std::this_thread::sleep_for(std::chrono::nanoseconds{due - now});
      }
      submit_probe(queue);
    }
    (void)collect_probe(true);
  }
}

void shader_clock::start(queue_slot& queue) {
  std::lock_guard lock{mutex_};
  if (probes_ == 0) submit_probe(queue);
}

profile_ticks shader_clock::window(const clock_record& record, queue_slot& queue) {
  std::lock_guard lock{mutex_};
  if (!calibration_.ready()) {
    calibrate(queue);
  } else {
    (void)collect_probe(false);
    if (!in_flight_ && steady_ns() - calibration_.last_anchor_ns() >
                           std::chrono::nanoseconds{reanchor_after}.count()) {
      submit_probe(queue);
    }
  }
  return calibration_.window(record, overhead_override_.value_or(calibration_.overhead()));
}

std::chrono::nanoseconds shader_clock::overhead() const {
  std::lock_guard lock{mutex_};
  return overhead_override_.value_or(calibration_.overhead());
}

double shader_clock::ns_per_tick() const {
  std::lock_guard lock{mutex_};
  return calibration_.ns_per_tick();
}

}  // namespace launchwatch::detail::vulkan
