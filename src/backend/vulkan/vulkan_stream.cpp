// One Vulkan stream: launches recorded into command buffers on the issuing thread and submitted in
// batches; ordering points on a timeline semaphore; failures, timing, captures.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "backend/vulkan/vulkan_stream.hpp"
#include "backend/vulkan/vulkan_graph.hpp"
#include "core/interface/diagnostics.hpp"

namespace launchwatch::detail::vulkan {
namespace {

/// Bytes the launch pushes before the kernel's: launchwatch.glsl's lw_launch_t.
struct launch_header {
  VkDeviceAddress failure;
  std::uint32_t index;
  std::uint32_t reserved;
};
static_assert(sizeof(launch_header) == 16);

/// A batch's host-visible memory: its failure word, then the fields of the launches too large to
/// push. 64 KiB holds a full batch of such launches of up to 240 bytes.
constexpr std::size_t arena_bytes = 64 * 1024;
constexpr std::size_t arena_header = 16;
/// Launches recorded before a batch is submitted on its own: a submit costs 10-47 us on NVIDIA's
/// driver (research/vulkan.md), so this makes it well under a tenth of a microsecond per launch,
/// while keeping a thread that only launches from running far ahead of the device.
constexpr std::size_t launches_per_batch = 256;
/// Batches submitted and not yet finished, before a new one waits for the oldest.
constexpr std::size_t batches_in_flight = 16;

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

void warn_slots_spent_once(const vulkan_device& d, std::uint32_t pairs) {
  if (!first_time(once_warning::vulkan_timing_slots_spent)) return;
  diagnostics().warn(
      "launchwatch: the timestamp budget of {} pairs of Vulkan device {} ({}) is spent (every pair "
      "is held by a measurement not yet read); falling back to system timing: such launches are "
      "timed `system`, host wall time around a blocking submit. Read measurements sooner, or raise "
      "LAUNCHWATCH_VULKAN_TIMESTAMPS",
      pairs, d.index(), d.name());
}

/// Reads one timed launch's pair of timestamps when asked, mapped onto the steady clock (never
/// before `submitted`); hands the pair back when read, or, dropped unread, once the launch has run.
/// Small enough to sit inside a profile_duration without an allocation.
class timestamp_resolver {
 public:
  timestamp_resolver(std::shared_ptr<vulkan_stream> on, std::uint32_t pair, std::uint64_t point,
                     instant submitted) noexcept
      : on_{std::move(on)}, pair_{pair}, point_{point}, submitted_{submitted} {}
  timestamp_resolver(timestamp_resolver&& other) noexcept
      : on_{std::move(other.on_)},
        pair_{other.pair_},
        point_{other.point_},
        submitted_{other.submitted_} {}
  timestamp_resolver& operator=(timestamp_resolver&&) = delete;
  timestamp_resolver(const timestamp_resolver&) = delete;
  timestamp_resolver& operator=(const timestamp_resolver&) = delete;
  ~timestamp_resolver() {
    if (on_) {
      auto* slots = on_->owner().slots();
      slots->release_after(pair_, std::move(on_), point_);
    }
  }

  std::optional<profile_ticks> operator()() {
    const std::shared_ptr<vulkan_stream> on = std::move(on_);
    on->wait(point_);  // submits the launch's batch if it is still open
    vulkan_device& d = on->owner();
    std::array<std::uint64_t, 2> stamps{};
    try {
      stamps = d.slots()->read(pair_);
    } catch (...) {
      d.slots()->release(pair_);
      throw;
    }
    d.slots()->release(pair_);
    return d.clock()->window(stamps[0], stamps[1], submitted_);
  }

 private:
  std::shared_ptr<vulkan_stream> on_;
  std::uint32_t pair_;
  std::uint64_t point_;
  instant submitted_;
};

static_assert(sizeof(timestamp_resolver) <= detail::profile_resolver::inline_size,
              "a deferred Vulkan measurement must not allocate per launch");

}  // namespace

vulkan_stream::vulkan_stream(std::shared_ptr<vulkan_device> owner)
    : owner_{std::move(owner)}, queue_{&owner_->next_queue()} {
  const device_api& api = owner_->api();
  VkCommandPoolCreateInfo pool{};
  pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = owner_->queue_family();
  check(api.vkCreateCommandPool(owner_->handle(), &pool, nullptr, &pool_), "vkCreateCommandPool");
  VkSemaphoreTypeCreateInfo type{};
  type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  VkSemaphoreCreateInfo semaphore{};
  semaphore.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  semaphore.pNext = &type;
  const VkResult made = api.vkCreateSemaphore(owner_->handle(), &semaphore, nullptr, &timeline_);
  if (made != VK_SUCCESS) {
    api.vkDestroyCommandPool(owner_->handle(), pool_, nullptr);
    check(made, "vkCreateSemaphore");
  }
}

vulkan_stream::~vulkan_stream() {
  try {
    {
      std::lock_guard lock{mutex_};
      flush();
    }
    wait(issued_.load());
  } catch (...) {
    // Destruction goes on: the device is lost, or out of memory, and nothing can be waited for.
  }
  const device_api& api = owner_->api();
  const auto release = [&](std::unique_ptr<batch>& b) {
    if (b) owner_->destroy(b->arena);
  };
  if (open_) release(open_);
  for (auto& b : flying_) release(b);
  for (auto& b : spare_) release(b);
  api.vkDestroyCommandPool(owner_->handle(), pool_, nullptr);  // frees its command buffers
  api.vkDestroySemaphore(owner_->handle(), timeline_, nullptr);
}

vulkan_stream::pending_launch vulkan_stream::pending(const launch_descriptor& launch) noexcept {
  return pending_launch{launch.name, launch.vulkan, launch.geometry, launch.kernel,
                        launch.kernel_size};
}

void vulkan_stream::validate(const launch_descriptor& launch) {
  if (launch.vulkan == nullptr) {
    throw invalid_launch{launch_rejected(
        launch.name, *owner_,
        "the kernel carries no compute shader. Write its GLSL twin (see "
        "include/launchwatch/vulkan/launchwatch.glsl), compile it with the CMake function "
        "launchwatch_vulkan_shaders(), and give the kernel a member `static constexpr "
        "launchwatch::vulkan_shader vulkan = <namespace>::<shader>;`")};
  }
  if (launch.vulkan->push.empty() || launch.vulkan->ring.empty()) {
    throw invalid_launch{launch_rejected(
        launch.name, *owner_,
        fmt::format("its shader {} holds no SPIR-V (it was generated by a build without a GLSL "
                    "compiler); install glslang-tools and rebuild",
                    launch.vulkan->source))};
  }
  if (launch.kernel_alignment > 16 || launch.kernel_size > arena_bytes - arena_header) {
    throw invalid_launch{launch_rejected(
        launch.name, *owner_,
        fmt::format("the kernel is {} bytes aligned to {}, and a Vulkan kernel may be at most {} "
                    "bytes aligned to at most 16; pass large data in a buffer",
                    launch.kernel_size, launch.kernel_alignment, arena_bytes - arena_header))};
  }
}

void vulkan_stream::prepare(const launch_descriptor& launch) {
  // A dry run creates and checks the pipeline the launch would bind, and dispatches nothing.
  const bool ring = sizeof(launch_header) + round_up(launch.kernel_size, 4) > owner_->push_bytes();
  (void)owner_->pipeline(*launch.vulkan, ring, launch.geometry.dim, launch.name);
}

std::unique_ptr<vulkan_stream::batch> vulkan_stream::take_batch() {
  reap();
  if (flying_.size() >= batches_in_flight) {
    // The host is far ahead of the device: wait for the oldest batch rather than queue more.
    const std::uint64_t oldest = flying_.front()->launches.back().second;
    VkSemaphoreWaitInfo info{};
    info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    info.semaphoreCount = 1;
    info.pSemaphores = &timeline_;
    info.pValues = &oldest;
    (void)owner_->api().vkWaitSemaphores(owner_->handle(), &info, std::numeric_limits<std::uint64_t>::max());
    reap();
  }
  if (!spare_.empty()) {
    auto b = std::move(spare_.back());
    spare_.pop_back();
    return b;
  }
  auto b = std::make_unique<batch>();
  VkCommandBufferAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  info.commandPool = pool_;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  check(owner_->api().vkAllocateCommandBuffers(owner_->handle(), &info, &b->commands),
        "vkAllocateCommandBuffers");
  b->arena = owner_->create_buffer(arena_bytes);
  std::memset(b->arena.mapped, 0, arena_header);
  b->used = arena_header;
  b->launches.reserve(launches_per_batch);
  return b;
}

std::uint64_t vulkan_stream::encode(const pending_launch& launch, std::optional<std::uint32_t> pair) {
  const device_api& api = owner_->api();
  const std::size_t pushed = sizeof(launch_header) + round_up(launch.size, 4);
  const bool ring = pushed > owner_->push_bytes();
  // Created (or found) before the batch is touched: a refused shader leaves the batch as it was.
  const VkPipeline pipeline = owner_->pipeline(*launch.shader, ring, launch.geometry.dim, launch.name);
  if (open_ && (open_->launches.size() >= launches_per_batch ||
                (ring && round_up(open_->used, 16) + launch.size > open_->arena.bytes))) {
    flush();
  }
  if (!open_) open_ = take_batch();
  batch& b = *open_;
  if (!b.open) {
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(api.vkBeginCommandBuffer(b.commands, &begin), "vkBeginCommandBuffer");
    b.open = true;
  }
  // In order: each launch sees what the ones before it on the queue wrote.
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  const auto order = [&] {
    api.vkCmdPipelineBarrier(b.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0,
                             nullptr);
  };
  order();
  VkQueryPool queries = pair ? owner_->slots()->pool() : VK_NULL_HANDLE;
  const bool flush_stamps = pair && owner_->flush_after_stamps();
  if (pair) {
    api.vkCmdWriteTimestamp(b.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, 2 * *pair);
    if (flush_stamps) order();
  }
  api.vkCmdBindPipeline(b.commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  alignas(16) std::array<std::byte, 256> push{};
  const launch_header header{b.arena.address, static_cast<std::uint32_t>(b.launches.size()), 0};
  std::memcpy(push.data(), &header, sizeof header);
  std::uint32_t push_size = 0;
  if (!ring) {
    if (launch.size > 0) std::memcpy(push.data() + sizeof header, launch.bytes, launch.size);
    push_size = static_cast<std::uint32_t>(pushed);
  } else {
    const std::size_t offset = round_up(b.used, 16);
    std::memcpy(b.arena.mapped + offset, launch.bytes, launch.size);
    b.used = offset + launch.size;
    const VkDeviceAddress fields = b.arena.address + offset;
    std::memcpy(push.data() + sizeof header, &fields, sizeof fields);
    push_size = static_cast<std::uint32_t>(sizeof header + sizeof fields);
  }
  api.vkCmdPushConstants(b.commands, owner_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size,
                         push.data());
  api.vkCmdDispatch(b.commands, launch.geometry.count.x, launch.geometry.count.y,
                    launch.geometry.count.z);
  if (pair) {
    api.vkCmdWriteTimestamp(b.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries,
                            2 * *pair + 1);
    if (flush_stamps) order();
  }
  const std::uint64_t point = issued_.load(std::memory_order_relaxed) + 1;
  b.launches.emplace_back(launch.name, point);
  issued_.store(point, std::memory_order_release);
  return point;
}

void vulkan_stream::flush() {
  if (!open_ || open_->launches.empty()) return;
  const device_api& api = owner_->api();
  batch& b = *open_;
  // What the batch wrote is visible to the host once its point has passed.
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api.vkCmdPipelineBarrier(b.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  check(api.vkEndCommandBuffer(b.commands), "vkEndCommandBuffer");
  const std::uint64_t value = b.launches.back().second;
  VkTimelineSemaphoreSubmitInfo timeline{};
  timeline.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
  timeline.signalSemaphoreValueCount = 1;
  timeline.pSignalSemaphoreValues = &value;
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.pNext = &timeline;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &b.commands;
  submit.signalSemaphoreCount = 1;
  submit.pSignalSemaphores = &timeline_;
  {
    std::lock_guard queue_lock{queue_->mutex};
    check(api.vkQueueSubmit(queue_->queue, 1, &submit, VK_NULL_HANDLE), "vkQueueSubmit");
  }
  flushed_ = value;
  flying_.push_back(std::move(open_));
}

std::uint64_t vulkan_stream::completed() const noexcept {
  const std::uint64_t known = completed_.load(std::memory_order_acquire);
  if (known >= issued_.load(std::memory_order_acquire)) return known;
  std::uint64_t value = 0;
  if (owner_->api().vkGetSemaphoreCounterValue(owner_->handle(), timeline_, &value) != VK_SUCCESS) {
    return known;
  }
  std::uint64_t seen = known;
  while (seen < value && !completed_.compare_exchange_weak(seen, value, std::memory_order_acq_rel)) {
  }
  return std::max(seen, value);
}

void vulkan_stream::reap() {
  if (flying_.empty()) return;
  const std::uint64_t done = completed();
  while (!flying_.empty() && flying_.front()->launches.back().second <= done) {
    std::unique_ptr<batch> b = std::move(flying_.front());
    flying_.pop_front();
    std::uint32_t failed = 0;
    std::memcpy(&failed, b->arena.mapped, sizeof failed);
    if (failed != 0 && failed <= b->launches.size()) {
      const auto [name, point] = b->launches[failed - 1];
      if (!failure_) {
        failure_.keep(kernel_failed(name, *owner_, id(), "a unit called lw_fail()"), point);
      }
    }
    std::memset(b->arena.mapped, 0, arena_header);
    (void)owner_->api().vkResetCommandBuffer(b->commands, 0);
    b->launches.clear();
    b->used = arena_header;
    b->open = false;
    spare_.push_back(std::move(b));
  }
}

void vulkan_stream::record_locked(const pending_launch& launch) {
  recorded_launch kept{launch.name, launch.shader, launch.geometry, {}};
  const auto* bytes = static_cast<const std::byte*>(launch.bytes);
  kept.bytes.assign(bytes, bytes + launch.size);
  capture_.add(std::move(kept));
}

std::uint64_t vulkan_stream::submit(const launch_descriptor& launch) {
  std::lock_guard lock{mutex_};
  if (capture_.open()) {
    record_locked(pending(launch));
    return 0;
  }
  return encode(pending(launch), std::nullopt);
}

profiled_submission vulkan_stream::submit_profiled(const launch_descriptor& launch,
                                                   launch_path::read_when when) {
  std::unique_lock lock{mutex_};
  if (capture_.open()) {
    record_locked(pending(launch));
    return profiled_submission{0, std::nullopt, launch_path::capture_refusal};
  }
  timing_slots* slots = owner_->slots();
  const std::optional<std::uint32_t> pair = slots != nullptr ? slots->acquire() : std::nullopt;
  if (pair) {
    const instant submitted = std::chrono::steady_clock::now();
    std::uint64_t point = 0;
    try {
      point = encode(pending(launch), pair);
      if (when == launch_path::read_when::at_once) flush();
    } catch (...) {
      if (point == 0) slots->release(*pair);
      throw;
    }
    return profiled_submission{
        point,
        profile_duration{timestamp_resolver{shared_from_this(), *pair, point, submitted},
                         timing_method::device},
        {}};
  }
  // No pair free: host wall time around a blocking submit of this launch alone.
  warn_slots_spent_once(*owner_, slots != nullptr ? slots->pairs() : 0);
  flush();
  const std::uint64_t before = issued_.load(std::memory_order_relaxed);
  lock.unlock();
  wait(before);
  lock.lock();
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t point = encode(pending(launch), std::nullopt);
  flush();
  lock.unlock();
  wait(point);
  const auto end = std::chrono::steady_clock::now();
  return profiled_submission{point, profile_duration::from_system_time(start, end), {}};
}

bool vulkan_stream::record(const launch_descriptor& launch) {
  std::lock_guard lock{mutex_};
  if (!capture_.open()) return false;
  record_locked(pending(launch));
  return true;
}

void vulkan_stream::wait(std::uint64_t point) {
  point = std::min(point, issued_.load(std::memory_order_acquire));
  if (point == 0) return;
  if (completed() < point) {
    {
      std::lock_guard lock{mutex_};
      try {
        if (point > flushed_) flush();
      } catch (...) {
        failure_.keep(std::current_exception(), point);
        completed_.store(issued_.load());  // nothing more will run: do not wait for it
        return;
      }
    }
    VkSemaphoreWaitInfo info{};
    info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    info.semaphoreCount = 1;
    info.pSemaphores = &timeline_;
    info.pValues = &point;
    const VkResult status = owner_->api().vkWaitSemaphores(
        owner_->handle(), &info, std::numeric_limits<std::uint64_t>::max());
    if (status != VK_SUCCESS) {
      std::lock_guard lock{mutex_};
      if (!failure_) {
        failure_.keep(std::make_exception_ptr(device_error{fmt::format(
                          "launchwatch: waiting for stream {} of {} failed with {}; the device is "
                          "lost, and this stream runs nothing more",
                          id(), label(*owner_), result_name(status))}),
                      point);
      }
      completed_.store(issued_.load());
      return;
    }
  }
  std::lock_guard lock{mutex_};
  reap();
}

std::uint64_t vulkan_stream::last_point() const noexcept {
  return issued_.load(std::memory_order_acquire);
}

bool vulkan_stream::passed(std::uint64_t point) const noexcept { return completed() >= point; }

std::exception_ptr vulkan_stream::take_failure() noexcept {
  std::lock_guard lock{mutex_};
  return failure_.take();
}

std::exception_ptr vulkan_stream::failure_through(std::uint64_t point) const noexcept {
  std::lock_guard lock{mutex_};
  return failure_.through(point);
}

void vulkan_stream::begin_capture() {
  std::lock_guard lock{mutex_};
  capture_.begin();
}

std::unique_ptr<recorded_graph> vulkan_stream::end_capture() {
  std::vector<recorded_launch> recorded;
  {
    std::lock_guard lock{mutex_};
    recorded = capture_.end();
  }
  return std::make_unique<vulkan_graph>(*owner_, std::move(recorded));
}

std::uint64_t vulkan_stream::replay(const std::vector<recorded_launch>& launches) {
  std::lock_guard lock{mutex_};
  for (const auto& l : launches) {
    encode(pending_launch{l.name, l.shader, l.geometry, l.bytes.data(), l.bytes.size()}, std::nullopt);
  }
  return issued_.load(std::memory_order_relaxed);
}

}  // namespace launchwatch::detail::vulkan
