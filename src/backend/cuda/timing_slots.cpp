#include "timing_slots.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "cuda_common/capture_mode.hpp"
#include "cuda_check.hpp"

namespace launchwatch::detail::cuda {
namespace {

constexpr std::size_t block_bytes = sizeof(cuda_timing_slot) * timing_collector::block_slots;

/// The window of one slot: the earliest entry and the latest exit over its lanes, or nothing when
/// no cube stamped it.
std::optional<device_window> fold(const cuda_timing_slot& slot) {
  std::uint64_t start_inverted = 0;
  std::uint64_t end = 0;
  for (const auto& lane : slot.lanes) {
    start_inverted = std::max<std::uint64_t>(start_inverted, lane.start_inverted);
    end = std::max<std::uint64_t>(end, lane.end);
  }
  if (start_inverted == 0 || end == 0) return std::nullopt;
  return device_window{~start_inverted, end};
}

constexpr std::string_view slots_variable = "LAUNCHWATCH_CUDA_TIMING_SLOTS";

}  // namespace

std::uint32_t parse_timing_slots(std::string_view value) {
  std::uint32_t slots = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), slots);
  if (error != std::errc{} || end != value.data() + value.size() || slots < 64 || slots > 65536 ||
      slots % timing_collector::block_slots != 0) {
    throw configuration_error{fmt::format(
        "{} is set to `{}`, which is not a number of timing slots: give a multiple of 64 from 64 "
        "to 65536, the most timed launches a device keeps in flight (unset means {})",
        slots_variable, value, timing_collector::default_slots)};
  }
  return slots;
}

std::uint32_t timing_slots_from_environment() {
  const char* set = std::getenv(std::string{slots_variable}.c_str());
  if (set == nullptr || *set == '\0') return timing_collector::default_slots;
  return parse_timing_slots(set);
}

timing_collector::timing_collector(int device, std::shared_ptr<device_health> health,
                                   std::uint32_t slots)
    : device_{device}, health_{std::move(health)}, max_blocks_{slots / block_slots} {
  device_guard on{device_};
  relaxed_capture_mode relaxed;
  check(cudaStreamCreateWithFlags(&private_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
        device_);
  void* staging = nullptr;
  check(cudaHostAlloc(&staging, block_bytes, cudaHostAllocDefault), "cudaHostAlloc", device_);
  staging_ = static_cast<cuda_timing_slot*>(staging);
  void* zeros = nullptr;
  check(cudaHostAlloc(&zeros, block_bytes, cudaHostAllocDefault), "cudaHostAlloc", device_);
  std::fill_n(static_cast<unsigned char*>(zeros), block_bytes, static_cast<unsigned char>(0));
  zeros_ = static_cast<cuda_timing_slot*>(zeros);
  void* staged = nullptr;
  check(cudaHostAlloc(&staged, sizeof(cuda_timing_slot) * staged_copies, cudaHostAllocDefault),
        "cudaHostAlloc", device_);
  staged_ = static_cast<cuda_timing_slot*>(staged);
  for (int i = staged_copies; i-- > 0;) {
    check(cudaEventCreateWithFlags(&staged_events_[static_cast<std::size_t>(i)],
                                   cudaEventDisableTiming),
          "cudaEventCreateWithFlags", device_);
    free_staged_.push_back(i);
  }
  collector_ = std::thread{[this] { run(); }};
}

void timing_collector::stop() noexcept {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  work_.notify_all();
  if (collector_.joinable()) collector_.join();
}

timing_collector::~timing_collector() {
  stop();
  // Batches never read back (the collector stopped first): their records were marked failed, and
  // the collector's share goes; a measurement still held keeps its batch until it is let go.
  for (timing_batch* batch : std::exchange(closed_, {})) batch->release(1);
  device_guard on{device_};
  for (const auto& b : blocks_) (void)cudaFree(b.slots);
  for (cudaEvent_t e : free_events_) (void)cudaEventDestroy(e);
  (void)cudaFreeHost(staging_);
  (void)cudaFreeHost(zeros_);
  (void)cudaFreeHost(staged_);
  for (cudaEvent_t e : staged_events_) (void)cudaEventDestroy(e);
  (void)cudaStreamDestroy(private_);
}

std::optional<std::uint32_t> timing_collector::take_block() {
  if (!free_blocks_.empty()) {
    const std::uint32_t block = free_blocks_.back();
    free_blocks_.pop_back();
    return block;
  }
  if (blocks_.size() >= max_blocks_ || failed_) return std::nullopt;
  device_guard on{device_};
  relaxed_capture_mode relaxed;
  void* memory = nullptr;
  if (cudaMalloc(&memory, block_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;  // out of device memory: the launch goes untimed
  }
  // Zeroed by a copy on the private stream, waited for here: the slots are empty before any launch
  // can be given one.
  const cudaError_t copied =
      cudaMemcpyAsync(memory, zeros_, block_bytes, cudaMemcpyHostToDevice, private_);
  if (copied != cudaSuccess || cudaStreamSynchronize(private_) != cudaSuccess) {
    (void)cudaGetLastError();
    (void)cudaFree(memory);
    return std::nullopt;
  }
  blocks_.push_back(block_memory{static_cast<cuda_timing_slot*>(memory)});
  return static_cast<std::uint32_t>(blocks_.size() - 1);
}

cudaEvent_t timing_collector::take_event() {
  if (!free_events_.empty()) {
    cudaEvent_t event = free_events_.back();
    free_events_.pop_back();
    return event;
  }
  device_guard on{device_};
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags",
        device_);
  return event;
}

std::optional<timing_collector::lease> timing_collector::acquire(
    std::shared_ptr<timing_batch>& open, cudaStream_t stream, instant submitted) {
  for (;;) {
    if (open) {
      std::shared_ptr<timing_batch> full;
      std::optional<lease> taken;
      {
        std::lock_guard batch_lock{open->mutex};
        if (open->open && open->used < timing_batch::capacity) {
          timing_record& record = open->records[open->used];
          record.submitted = submitted;
          record.slot = open->slots + open->used;
          record.batch = open.get();
          taken = lease{cuda_timing_target{record.slot}, &record, nullptr};
          if (++open->used == timing_batch::capacity) full = open;
        }
      }
      if (taken) {
        if (full) {
          taken->filled = std::move(full);
          open.reset();
        }
        return taken;
      }
      open.reset();  // closed by a read, or by a capture: start another
    }
    auto batch = std::make_unique<timing_batch>(*this);
    {
      std::lock_guard lock{mutex_};
      const auto block = take_block();
      if (!block) return std::nullopt;
      batch->block = *block;
      batch->slots = blocks_[*block].slots;
      try {
        batch->beacon = take_event();
      } catch (...) {
        free_blocks_.push_back(*block);
        throw;
      }
    }
    batch->stream = stream;
    // Shared only once it holds a block and a beacon. The owner's share is the shared_ptr's: when
    // the last copy goes, the batch is closed (if its owner left it open) and that share released.
    open = std::shared_ptr<timing_batch>{batch.release(), [](timing_batch* b) noexcept {
                                           b->collector.close(*b);
                                           b->release(1);
                                         }};
  }
}

void timing_collector::close(timing_batch& batch) noexcept {
  std::uint32_t unused = 0;
  {
    std::lock_guard batch_lock{batch.mutex};
    if (!batch.open) return;
    batch.open = false;
    unused = timing_batch::capacity - batch.used;
    if (batch.used > 0) {
      device_guard on{device_};
      const cudaError_t status = cudaEventRecord(batch.beacon, batch.stream);
      if (status != cudaSuccess) {
        (void)health_->note(status, "cudaEventRecord (a timing batch's beacon)");
        (void)cudaGetLastError();
      }
    }
    // The collector's share, taken while the caller's keeps the batch alive.
    batch.holders.fetch_add(1, std::memory_order_relaxed);
  }
  if (unused > 0) batch.release(unused);
  bool wake = false;
  {
    std::lock_guard lock{mutex_};
    closed_.push_back(&batch);
    poked_ = true;
    wake = idle_;
  }
  // A collector that is polling finds the batch at its next poll (within a millisecond); waking it
  // would cost the launching thread a system call every batch.
  if (wake) work_.notify_one();
}

void timing_collector::let_go(timing_record* record) noexcept {
  // Staged but dropped unread: its copy goes back once it has landed (one still in flight is left
  // out of use rather than waited for).
  const int copy = std::exchange(record->staged, -1);
  if (copy >= 0 &&
      cudaEventQuery(staged_events_[static_cast<std::size_t>(copy)]) == cudaSuccess) {
    std::lock_guard lock{mutex_};
    free_staged_.push_back(copy);
  }
  record->batch->release(1);
}

std::size_t timing_collector::blocks() const noexcept {
  std::lock_guard lock{mutex_};
  return blocks_.size();
}

void timing_collector::stage(timing_record& record, cudaStream_t stream) noexcept {
  int copy = -1;
  {
    std::lock_guard lock{mutex_};
    if (free_staged_.empty()) return;
    copy = free_staged_.back();
    free_staged_.pop_back();
  }
  const cudaError_t copied =
      cudaMemcpyAsync(staged_ + copy, record.slot, sizeof(cuda_timing_slot), cudaMemcpyDeviceToHost,
                      stream);
  if (copied != cudaSuccess ||
      cudaEventRecord(staged_events_[static_cast<std::size_t>(copy)], stream) != cudaSuccess) {
    (void)cudaGetLastError();
    std::lock_guard lock{mutex_};
    free_staged_.push_back(copy);
    return;
  }
  record.staged = copy;
}

std::optional<device_window> timing_collector::read_alone(timing_record& record) {
  const int copy = std::exchange(record.staged, -1);
  if (copy < 0) return std::nullopt;
  struct give_back {
    timing_collector& collector;
    int copy;
    ~give_back() {
      std::lock_guard lock{collector.mutex_};
      collector.free_staged_.push_back(copy);
    }
  } on_exit{*this, copy};
  const cudaError_t status = cudaEventSynchronize(staged_events_[static_cast<std::size_t>(copy)]);
  if (status != cudaSuccess) {
    (void)health_->note(status, "cudaEventSynchronize (a timed launch read at once)");
    (void)cudaGetLastError();
    return std::nullopt;  // wait() reports the device's fault
  }
  return fold(staged_[copy]);
}

std::optional<device_window> timing_collector::wait(timing_record& record,
                                                    std::string_view kernel) {
  if (record.state.load(std::memory_order_acquire) == timing_record::pending) {
    close(*record.batch);
    std::unique_lock lock{mutex_};
    poked_ = true;
    work_.notify_one();
    collected_.wait(lock, [&] {
      return record.state.load(std::memory_order_acquire) != timing_record::pending || failed_;
    });
  }
  switch (record.state.load(std::memory_order_acquire)) {
    case timing_record::collected:
      return record.window;
    case timing_record::no_window:
      return std::nullopt;
    default:
      break;
  }
  health_->throw_if_failed();
  throw device_error{fmt::format(
      "launchwatch: the timing of kernel '{}' on CUDA device {} was never read back: deferred "
      "timing stopped (the process is exiting, or the device failed)",
      kernel, device_)};
}

bool timing_collector::collect(timing_batch& batch) {
  cuda_timing_slot* const base = batch.slots;
  const std::size_t bytes = sizeof(cuda_timing_slot) * batch.used;
  if (bytes > 0) {
    cudaError_t status = cudaMemcpyAsync(staging_, base, bytes, cudaMemcpyDeviceToHost, private_);
    if (status == cudaSuccess) {
      status = cudaMemcpyAsync(base, zeros_, bytes, cudaMemcpyHostToDevice, private_);
    }
    if (status == cudaSuccess) status = cudaStreamSynchronize(private_);
    if (status != cudaSuccess) {
      (void)health_->note(status, "reading deferred timing back (cudaMemcpyAsync)");
      fail_pending();
      return false;
    }
  }
  for (std::uint32_t i = 0; i < batch.used; ++i) {
    timing_record& record = batch.records[i];
    if (const auto window = fold(staging_[i])) {
      record.window = *window;
      record.state.store(timing_record::collected, std::memory_order_release);
    } else {
      record.state.store(timing_record::no_window, std::memory_order_release);
    }
  }
  std::lock_guard lock{mutex_};
  free_blocks_.push_back(batch.block);
  free_events_.push_back(batch.beacon);
  return true;
}

void timing_collector::fail_pending() noexcept {
  std::lock_guard lock{mutex_};
  mark_pending_failed();
}

void timing_collector::mark_pending_failed() noexcept {
  failed_ = true;
  for (const auto& batch : closed_) {
    for (std::uint32_t i = 0; i < batch->used; ++i) {
      batch->records[i].state.store(timing_record::failed, std::memory_order_release);
    }
  }
  collected_.notify_all();
}

void timing_collector::run() {
  device_guard on{device_};
  relaxed_capture_mode relaxed;
  // Polls the beacons of closed batches: short sleeps while kernels run, longer ones the longer
  // nothing passes, at once when a batch closes or a read is waiting.
  auto pause = std::chrono::microseconds{20};
  std::unique_lock lock{mutex_};
  for (;;) {
    if (closed_.empty()) {
      idle_ = true;
      work_.wait(lock, [&] { return stopping_ || !closed_.empty(); });
      idle_ = false;
      pause = std::chrono::microseconds{20};
    }
    if (stopping_ || failed_) break;
    std::vector<timing_batch*> pending{closed_.begin(), closed_.end()};
    lock.unlock();
    bool progressed = false;
    bool broken = false;
    for (const auto& batch : pending) {
      const cudaError_t status =
          batch->used == 0 ? cudaSuccess : cudaEventQuery(batch->beacon);
      if (status == cudaErrorNotReady) continue;
      if (status != cudaSuccess) {
        (void)health_->note(status, "cudaEventQuery (a timing batch's beacon)");
        fail_pending();
        (void)cudaGetLastError();
        broken = true;
        break;
      }
      if (!collect(*batch)) {
        broken = true;
        break;
      }
      progressed = true;
      {
        std::lock_guard erase{mutex_};
        closed_.erase(std::find(closed_.begin(), closed_.end(), batch));
      }
      batch->release(1);  // the collector's share
    }
    lock.lock();
    if (broken) break;
    if (progressed) {
      collected_.notify_all();
      pause = std::chrono::microseconds{20};
      continue;
    }
    work_.wait_for(lock, pause, [&] { return stopping_ || poked_; });
    pause = std::exchange(poked_, false) ? std::chrono::microseconds{20}
                                         : std::min(pause * 2, std::chrono::microseconds{1000});
  }
  // Stopped (at exit, or the device failed): whatever is still pending will never be read back.
  mark_pending_failed();
}

}  // namespace launchwatch::detail::cuda
