// One Vulkan stream: launches recorded into command buffers on the issuing thread and submitted in
// batches; ordering points on a timeline semaphore; failures, timing, captures.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "backend/vulkan/commands.hpp"
#include "backend/vulkan/vulkan_graph.hpp"
#include "backend/vulkan/vulkan_stream.hpp"
#include "core/interface/diagnostics.hpp"

namespace launchwatch::detail::vulkan {
namespace {

/// Bytes the launch pushes before the kernel's: launchwatch.glsl's lw_launch_t.
struct launch_header {
  VkDeviceAddress failure;
  std::uint32_t index;
  std::uint32_t timing_slot;  // read by a timed entry only
};
static_assert(sizeof(launch_header) == 16);

/// The fold's fields (src/backend/vulkan/shaders/fold_clock_slots.comp's lw_args).
struct fold_fields {
  VkDeviceAddress lanes;
  VkDeviceAddress slots;
  VkDeviceAddress windows;
  std::uint32_t count;
  std::uint32_t narrow;
};

/// A batch's readback memory: each shader-clock launch's slot, then its folded window.
constexpr std::size_t readback_slots_offset = 0;
constexpr std::size_t readback_windows_offset = 1024;

/// A batch's host-visible memory: its failure word, then the fields of the launches too large to
/// push. 64 KiB holds a full batch of such launches of up to 240 bytes.
constexpr std::size_t arena_bytes = 64 * 1024;
constexpr std::size_t arena_header = 16;
/// Launches recorded before a batch is submitted on its own: a submit costs 10-47 us on NVIDIA's
/// driver (research/vulkan.md), so this makes it well under a tenth of a microsecond per launch,
/// while keeping a thread that only launches from running far ahead of the device.
constexpr std::size_t launches_per_batch = 256;
/// A batch opened after a sync, read, resolved measurement or release submitted the one before,
/// with nothing of the stream left in flight, holds this many; each next batch twice as many as the
/// one before, up to launches_per_batch. So after a sync the device starts after a few launches'
/// recording, not a full batch's (256 launches at 1-3 us each), and a thread that keeps launching
/// reaches full batches however fast the device finishes them (a batch of 32 tiny kernels can run
/// within one 10-47 us submit, so "nothing in flight" alone would keep such a stream at 32).
constexpr std::size_t first_batch_launches = 32;
/// Batches submitted and not yet finished, before a new one waits for the oldest.
constexpr std::size_t batches_in_flight = 16;

static_assert(clock_records::capacity >= launches_per_batch,
              "a batch's shader-clock launches each need a record");
static_assert(readback_windows_offset >= sizeof(std::uint32_t) * launches_per_batch);

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
    return on->place_read(point_, d.clock()->window(stamps[0], stamps[1], submitted_), submitted_);
  }

 private:
  std::shared_ptr<vulkan_stream> on_;
  std::uint32_t pair_;
  std::uint64_t point_;
  instant submitted_;
};

static_assert(sizeof(timestamp_resolver) <= detail::profile_resolver::inline_size,
              "a deferred Vulkan measurement must not allocate per launch");

/// Reads one launch's window as its shader stamped it, once its batch has been folded and read
/// back, mapped onto the steady clock by the device's shader clock; lets its record go when read or
/// dropped (the slot went back when the batch was read back).
class clock_resolver {
 public:
  clock_resolver(std::shared_ptr<vulkan_stream> on, clock_records* records, std::uint32_t index,
                 std::uint64_t point) noexcept
      : on_{std::move(on)}, records_{records}, index_{index}, point_{point} {
    records_->hold();
  }
  clock_resolver(clock_resolver&& other) noexcept
      : on_{std::move(other.on_)},
        records_{std::exchange(other.records_, nullptr)},
        index_{other.index_},
        point_{other.point_} {}
  clock_resolver& operator=(clock_resolver&&) = delete;
  clock_resolver(const clock_resolver&) = delete;
  clock_resolver& operator=(const clock_resolver&) = delete;
  ~clock_resolver() {
    if (records_ != nullptr) records_->release();
  }

  std::optional<profile_ticks> operator()() {
    struct let_go {
      clock_records* records;
      ~let_go() { records->release(); }
    } on_exit{std::exchange(records_, nullptr)};
    const std::shared_ptr<vulkan_stream> on = std::move(on_);
    on->wait(point_);  // submits the launch's batch if it is still open, and reads it back
    const clock_record& record = on_exit.records->records[index_];
    // Not collected after the wait: the stream failed before its batch ran (the failure is
    // reported by its sync); the launch left no window.
    if (record.state.load(std::memory_order_acquire) != clock_record::collected)
      return std::nullopt;
    return on->place_read(point_, on->owner().shader_time().window(record, on->queue()),
                          record.submitted);
  }

 private:
  std::shared_ptr<vulkan_stream> on_;
  clock_records* records_;
  std::uint32_t index_;
  std::uint64_t point_;
};

static_assert(sizeof(clock_resolver) <= detail::profile_resolver::inline_size,
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
    if (!b) return;
    abandon_clock(*b);
    owner_->destroy(b->arena);
    owner_->destroy(b->clock.readback);
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

std::unique_ptr<vulkan_stream::batch> vulkan_stream::take_batch(bool launching) {
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
  batch_limit_ = !launching && flying_.empty() ? first_batch_launches
                                               : std::min(launches_per_batch, 2 * batch_limit_);
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

vulkan_stream::encoded vulkan_stream::encode(const pending_launch& launch,
                                             const launch_timing& timing) {
  const device_api& api = owner_->api();
  const std::size_t pushed = sizeof(launch_header) + round_up(launch.size, 4);
  const bool ring = pushed > owner_->push_bytes();
  const bool by_clock = timing.how == timed_by::shader_clock;
  const bool by_pair = timing.how == timed_by::timestamps;
  // Created (or found) before the batch is touched: a refused shader leaves the batch as it was.
  const VkPipeline pipeline =
      owner_->pipeline(*launch.shader, ring, launch.geometry.dim, launch.name, by_clock);
  bool launching = false;  // the batch before this launch's is submitted by it, not by a sync
  if (open_ && (open_->launches.size() >= batch_limit_ ||
                (ring && round_up(open_->used, 16) + launch.size > open_->arena.bytes))) {
    flush();
    launching = true;
  }
  if (!open_) open_ = take_batch(launching);
  batch& b = *open_;
  if (!b.open) {
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(api.vkBeginCommandBuffer(b.commands, &begin), "vkBeginCommandBuffer");
    b.open = true;
  }
  if (by_clock) {
    // What the fold needs, made at the batch's first shader-clock launch (and kept with the batch).
    if (b.clock.readback.buffer == VK_NULL_HANDLE) {
      b.clock.readback = owner_->create_buffer(
          readback_windows_offset + 2 * sizeof(std::uint64_t) * launches_per_batch,
          memory_use::readback);
      b.clock.slots.reserve(launches_per_batch);
    }
    if (b.clock.records == nullptr) b.clock.records = new clock_records;
  }
  // In order: each launch sees what the ones before it on the queue wrote.
  const auto order = [&] { record_barrier(api, b.commands, visible_to::shaders); };
  order();
  VkQueryPool queries = by_pair ? owner_->slots()->pool() : VK_NULL_HANDLE;
  const bool flush_stamps = by_pair && owner_->flush_after_stamps();
  if (by_pair) {
    api.vkCmdWriteTimestamp(b.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries,
                            2 * timing.slot);
    if (flush_stamps) order();
  }
  api.vkCmdBindPipeline(b.commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  alignas(16) std::array<std::byte, 256> push{};
  const launch_header header{b.arena.address, static_cast<std::uint32_t>(b.launches.size()),
                             by_clock ? timing.slot : 0};
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
  if (by_pair) {
    api.vkCmdWriteTimestamp(b.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries,
                            2 * timing.slot + 1);
    if (flush_stamps) order();
  }
  const std::uint64_t point = issued_.load(std::memory_order_relaxed) + 1;
  b.launches.emplace_back(launch.name, point);  // reserved for a full batch: never throws
  issued_.store(point, std::memory_order_release);
  encoded at{point};
  if (by_clock) {
    const auto record = static_cast<std::uint32_t>(b.clock.slots.size());
    std::byte* readback = b.clock.readback.mapped;
    std::memcpy(readback + readback_slots_offset + sizeof(std::uint32_t) * record, &timing.slot,
                sizeof timing.slot);
    // Zeroed here, so a window the fold never wrote (the batch did not run) reads as none.
    std::memset(readback + readback_windows_offset + 2 * sizeof(std::uint64_t) * record, 0,
                2 * sizeof(std::uint64_t));
    b.clock.records->records[record].submitted = timing.submitted;
    b.clock.slots.push_back(timing.slot);
    at.records = b.clock.records;
    at.record = record;
  }
  return at;
}

vulkan_stream::encoded vulkan_stream::encode(const pending_launch& launch) {
  return encode(launch, launch_timing{});
}

void vulkan_stream::flush() {
  if (!open_ || open_->launches.empty()) return;
  const device_api& api = owner_->api();
  batch& b = *open_;
  if (!b.clock.slots.empty()) {
    // The batch's shader-clock launches are read back in bulk: one dispatch after the last of them
    // folds each one's slot into its window for the host and zeroes the slot. Nothing is added
    // between the user's kernels.
    record_barrier(api, b.commands, visible_to::shaders);
    api.vkCmdBindPipeline(b.commands, VK_PIPELINE_BIND_POINT_COMPUTE, owner_->fold_pipeline());
    const auto count = static_cast<std::uint32_t>(b.clock.slots.size());
    struct {
      launch_header header;
      fold_fields fields;
    } push{{b.arena.address, 0, 0},
           {owner_->shader_slots().address(), b.clock.readback.address + readback_slots_offset,
            b.clock.readback.address + readback_windows_offset, count,
            owner_->narrow_clock() ? 1u : 0u}};
    api.vkCmdPushConstants(b.commands, owner_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           sizeof push, &push);
    api.vkCmdDispatch(b.commands, (count + 63) / 64, 1, 1);
  }
  // What the batch wrote is visible to the host once its point has passed.
  record_barrier(api, b.commands, visible_to::host);
  check(api.vkEndCommandBuffer(b.commands), "vkEndCommandBuffer");
  const std::uint64_t value = b.launches.back().second;
  submit_signalling(api, *queue_, b.commands, timeline_, value, "vkQueueSubmit");
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
    collect_clock(*b);
    std::memset(b->arena.mapped, 0, arena_header);
    (void)owner_->api().vkResetCommandBuffer(b->commands, 0);
    b->launches.clear();
    b->used = arena_header;
    b->open = false;
    spare_.push_back(std::move(b));
  }
}

void vulkan_stream::collect_clock(batch& finished) noexcept {
  clock_part& clock = finished.clock;
  if (clock.records == nullptr) return;
  const std::byte* windows = clock.readback.mapped + readback_windows_offset;
  for (std::size_t i = 0; i < clock.slots.size(); ++i) {
    std::uint64_t folded[2]{};
    std::memcpy(folded, windows + sizeof folded * i, sizeof folded);
    clock_record& record = clock.records->records[i];
    if (folded[0] == 0) {
      record.state.store(clock_record::no_window, std::memory_order_release);
      continue;
    }
    record.start = ~folded[0];
    record.end = folded[1];
    record.has_previous = last_clock_end_.has_value();
    record.previous_end = last_clock_end_.value_or(0);
    last_clock_end_ = record.end;
    record.state.store(clock_record::collected, std::memory_order_release);
  }
  owner_->shader_slots().release(clock.slots);
  clock.slots.clear();
  std::exchange(clock.records, nullptr)->release();
}

void vulkan_stream::abandon_clock(batch& never_run) noexcept {
  clock_part& clock = never_run.clock;
  if (clock.records == nullptr) return;
  for (std::size_t i = 0; i < clock.slots.size(); ++i) {
    clock.records->records[i].state.store(clock_record::no_window, std::memory_order_release);
  }
  owner_->shader_slots().release(clock.slots);
  clock.slots.clear();
  std::exchange(clock.records, nullptr)->release();
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
  return encode(pending(launch)).point;
}

profiled_submission vulkan_stream::submit_profiled(const launch_descriptor& launch,
                                                   launch_path::read_when when) {
  std::unique_lock lock{mutex_};
  if (capture_.open()) {
    record_locked(pending(launch));
    return profiled_submission{0, std::nullopt, launch_path::capture_refusal};
  }
  const bool at_once = when == launch_path::read_when::at_once;
  // First choice: the launch's own shader stamps the device clock (nothing between kernels).
  const vulkan_shader& shader = *launch.vulkan;
  if (!shader.timed_push.empty() && !shader.timed_ring.empty() && owner_->shader_timing(*queue_)) {
    clock_slots& clock = owner_->shader_slots();
    std::optional<std::uint32_t> slot = clock.acquire();
    if (!slot) {
      reap();  // this stream's finished batches give their slots back
      slot = clock.acquire();
    }
    if (slot) {
      const launch_timing timing{timed_by::shader_clock, *slot, std::chrono::steady_clock::now()};
      encoded at;
      try {
        at = encode(pending(launch), timing);
      } catch (...) {
        clock.release(std::span{&*slot, 1});
        throw;
      }
      // Held from here, so the record is let go whatever happens: a batch that never runs leaves
      // it without a window.
      profile_duration measurement{
          clock_resolver{shared_from_this(), at.records, at.record, at.point},
          timing_method::device};
      if (at_once) flush();
      owner_->note_timed(timed_by::shader_clock);
      return profiled_submission{at.point, std::move(measurement), {}};
    }
  }
  // Then a pair of timestamp queries around the dispatch, from the device's budget.
  timing_slots* slots = owner_->slots();
  const std::optional<std::uint32_t> pair = slots != nullptr ? slots->acquire() : std::nullopt;
  if (pair) {
    const instant submitted = std::chrono::steady_clock::now();
    std::uint64_t point = 0;
    try {
      point = encode(pending(launch), launch_timing{timed_by::timestamps, *pair, submitted}).point;
      if (at_once) flush();
    } catch (...) {
      if (point == 0) slots->release(*pair);
      throw;
    }
    owner_->note_timed(timed_by::timestamps);
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
  const std::uint64_t point = encode(pending(launch)).point;
  flush();
  lock.unlock();
  wait(point);
  const auto end = std::chrono::steady_clock::now();
  owner_->note_timed(timed_by::system);
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
    encode(pending_launch{l.name, l.shader, l.geometry, l.bytes.data(), l.bytes.size()});
  }
  return issued_.load(std::memory_order_relaxed);
}

}  // namespace launchwatch::detail::vulkan
