// Deferred timing's storage for one GPU device: the device slots timed launches stamp, the host
// records that hold each launch's window once read back, and the collector that reads them back in
// bulk, off the issuing thread and off the user's stream.
//
// "Timing slots" is one concept in every backend (cpu/timing_slots.hpp, vulkan/timing_slots.hpp):
// the bounded places where the device writes a timed launch's two stamps, lent to the launch from
// its submission until its measurement is read back. Here a slot is a `timing_slot` in device
// memory (device_entry.hpp), stamped by the launch's own kernel with the device's nanosecond timer,
// and slots go in batches.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/stream_read_order.hpp"

#include <launchwatch/detail/device_entry.hpp>
#include <launchwatch/profile.hpp>

#include "core/interface/thread_name.hpp"
#include "device_guard.hpp"
#include "device_health.hpp"
#include "timing_batch_state.hpp"

namespace launchwatch::detail::gpu {

/// Timed launches a batch holds, and the slots of device memory a block of them takes. Each batch
/// costs a beacon on the launching thread and a wait, a copy back and a zeroing copy on the
/// collector's, whose driver calls contend with the launches' for the driver's locks: on an H200's
/// host, batches of 64 cost a deferred launch 3-6 points more than batches of 512
/// (docs/benchmarks.md, "Which per-batch work it is, and batches of 512").
inline constexpr std::uint32_t timing_batch_capacity = 512;
/// The slots deferred timing may take on one device unless the runtime's variable says otherwise:
/// 32 blocks, so 32 streams can each hold an open batch before any launch goes untimed.
inline constexpr std::uint32_t default_timing_slots = 32 * timing_batch_capacity;

/// A launch's window as the device stamped it, in the device timer's nanoseconds.
struct device_window {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
};

template <class R>
struct timing_batch;
template <class R>
class timing_collector;

/// One timed launch's measurement on the host: filled by the collector once the launch has ended,
/// read by whoever holds its profile_duration.
///
/// Lives inside its batch (no pool, no lock to take one): about 64 bytes of host memory, so a pass
/// may keep millions unread; the device slot it was stamped in goes back as soon as the batch is
/// read back, and the batch's host memory once its last measurement is let go.
template <class R>
struct timing_record {
  enum : std::uint32_t { pending = 0, collected = 1, no_window = 2, failed = 3 };
  std::atomic<std::uint32_t> state{pending};
  device_window window;
  /// When the launch was submitted, on the host: a mapped window never starts before it.
  instant submitted{};
  /// Its place among its stream's timed launches (from 1): a mapped window never starts before an
  /// earlier one of its stream ended (timing_batch::reads).
  std::uint64_t sequence = 0;
  /// The slot it was stamped in, for a read of it alone.
  timing_slot* slot = nullptr;
  /// Where stage() copied the slot in the launch's own stream, when it was (an index into the
  /// collector's staged copies), or -1.
  int staged = -1;
  /// The batch it sits in: a read that finds it pending has the batch closed, and letting it go
  /// releases its share of the batch.
  timing_batch<R>* batch = nullptr;
};

/// Up to `capacity` timed launches of one stream, in issue order, stamped into one block of
/// consecutive slots; read back together after the stream passes the batch's beacon (an event with
/// timing disabled, recorded after the batch's last launch: measured free on an H200).
///
/// Its host memory is held by the stream that fills it (through a shared_ptr, one holder however
/// many copies), by the collector from its close until it is read back (one), and by each launch's
/// measurement (one each, taken with the slot at no extra cost: every record starts held, and those
/// a batch closes without are released at its close). The last holder frees it.
template <class R>
struct timing_batch {
  static constexpr std::uint32_t capacity = timing_batch_capacity;

  explicit timing_batch(timing_collector<R>& owner) noexcept : collector{owner} {}
  timing_batch(const timing_batch&) = delete;
  timing_batch& operator=(const timing_batch&) = delete;

  /// Closes the batch, if its owner let it go open, before releasing the owner's share.
  timing_collector<R>& collector;

  timing_batch_state state;  // its used() is fixed once the batch is closed
  typename R::stream_handle stream = nullptr;
  /// The read order of the stream's windows (the stream's, shared: a measurement may outlive its
  /// stream); null when the caller of acquire() gave none.
  std::shared_ptr<stream_reads> reads;
  typename R::event_handle beacon = nullptr;
  std::uint32_t block = 0;
  timing_slot* slots = nullptr;  // the block's first slot, in device memory
  /// The owner's share, the collector's once closed, one per record; the batch is freed at zero.
  std::atomic<std::uint32_t> holders{capacity + 1};
  std::array<timing_record<R>, capacity> records{};

  /// Releases `count` holders; the last frees the batch. Never throws.
  void release(std::uint32_t count) noexcept {
    if (holders.fetch_sub(count, std::memory_order_acq_rel) == count) delete this;
  }
};

/// Timed launches' slots, records and their collection, for one device.
///
/// A stream keeps an open batch; a timed launch takes the batch's next slot and record (one
/// atomic operation on the batch's state; a block of device memory is allocated only while the
/// device has fewer than `max_blocks`), and says launched() once its kernel is submitted. The
/// batch closes when it is full, when its stream begins a capture or goes, or when a read finds
/// its record still pending (at once when no launch holds a slot of it without having submitted
/// its kernel; otherwise that launch closes it at its launched(): timing_batch_state.hpp): then a
/// beacon is recorded on the stream and the batch handed to the collector thread, which waits for
/// the beacon on a private stream, copies the block to the host, zeroes it with a copy (a memset
/// may run as a kernel, on the user's SMs) and folds each slot's lanes into its record. Nothing is
/// added between the user's kernels but one beacon per batch.
///
/// Bounded: at most `max_blocks` blocks of device memory (64 MiB by default, taken a block at a
/// time as launches get ahead of the device) however long the pass; when every
/// block is in flight, acquire() says so and the launch goes untimed.
///
/// Thread safety: every member may be called from any thread.
template <class R>
class timing_collector {
 public:
  /// Slots per block, a batch's worth.
  static constexpr std::uint32_t block_slots = timing_batch<R>::capacity;
  /// A block's device memory.
  static constexpr std::size_t block_bytes = sizeof(timing_slot) * block_slots;
  /// The slots deferred timing takes on one device unless the runtime's variable
  /// (LAUNCHWATCH_CUDA_TIMING_SLOTS, LAUNCHWATCH_HIP_TIMING_SLOTS) says otherwise: 32 blocks of
  /// 2 MiB, 64 MiB at most, as many launches as CUDA queues on a stream and more.
  static constexpr std::uint32_t default_slots = default_timing_slots;

  /// What a timed launch stamps into, and where its measurement will be. `filled` is the batch
  /// this launch filled, which the caller closes once the launch is submitted (its beacon must come
  /// after it).
  struct lease {
    timing_target target;
    timing_record<R>* record = nullptr;
    std::shared_ptr<timing_batch<R>> filled;
  };

  /// `slots`: the most slots of device memory it may take (a multiple of block_slots, see
  /// timing_slots_from_environment()).
  timing_collector(int device, std::shared_ptr<device_health<R>> health, std::uint32_t slots);
  /// Stops the collector thread. Precondition: no timed launch is still running.
  ~timing_collector();
  timing_collector(const timing_collector&) = delete;
  timing_collector& operator=(const timing_collector&) = delete;

  /// A slot and a record for a timed launch on `stream`, whose open batch is `open` (made or
  /// replaced here; a batch made here shares `reads`, the stream's read order). Nothing when every
  /// block is in flight: the launch then goes untimed.
  /// Precondition: the caller holds the stream's lock and the stream is not capturing; it calls
  /// launched() for the record once the kernel is submitted, or failed, before it releases the
  /// lock.
  /// Cost: an atomic compare-and-swap on the batch's state; every `block_slots` launches, a new
  /// batch (an allocation of about 4 KiB), the device's lock and a block from the pool (a device
  /// allocation while fewer than the budget's exist). The caller closes a batch the launch filled
  /// (a beacon) after submitting it.
  std::optional<lease> acquire(std::shared_ptr<timing_batch<R>>& open,
                               typename R::stream_handle stream, instant submitted,
                               const std::shared_ptr<stream_reads>& reads = nullptr);

  /// Says that the launch given `record` submitted its kernel (or failed to): a batch a reader
  /// flagged meanwhile is closed now, its beacon after that kernel. Precondition: the caller holds
  /// the stream's lock, as at acquire(). Cost: an atomic compare-and-swap; rarely, a close. Never
  /// throws.
  void launched(timing_record<R>& record) noexcept;

  /// Closes `batch` if still open: records its beacon on its stream and hands it to the collector.
  /// Precondition: the stream's lock is held, and no launch of it holds a slot of the batch
  /// without having said launched() (a read goes through wait(), which asks instead). The caller
  /// holds a share of the batch (its owner's, or a record's).
  /// Cost: an atomic compare-and-swap, an event record and the device's lock; the collector thread
  /// is woken only when it sleeps (it polls for a while after its last batch, and finds this one
  /// at its next poll) or when a quarter of the device's blocks wait to be read back.
  void close(timing_batch<R>& batch) noexcept;
  void close(const std::shared_ptr<timing_batch<R>>& batch) noexcept { close(*batch); }

  /// Blocks until `record` is collected, having its batch closed if it is still open (at once, or
  /// by its stream's launch in progress: timing_batch_state.hpp); returns its window, or nothing
  /// when the launch left none. Throws device_error (naming `kernel`) when the device failed before
  /// the window was read. Holds no stream's lock: may be called from any thread.
  std::optional<device_window> wait(timing_record<R>& record, std::string_view kernel);

  /// For a launch whose measurement is read right after it (resolved timing), where waiting for a
  /// batch would cost more than the kernel: queues a copy of its slot to pinned host memory and an
  /// event behind it, in the launch's own stream, so one wait on the event brings both. Does
  /// nothing when every staged copy is in use (the read then goes through its batch).
  /// Precondition: the caller holds the stream's lock, right after submitting the launch.
  void stage(timing_record<R>& record, typename R::stream_handle stream) noexcept;

  /// Reads `record`'s window from its staged copy, waiting for the copy's event. Nothing when it
  /// was not staged: then wait() has it.
  std::optional<device_window> read_alone(timing_record<R>& record);

  /// Says the measurement of `record` is done with it (read or dropped): its share of the batch is
  /// released, and a staged copy it left goes back. Never throws.
  void let_go(timing_record<R>* record) noexcept;

  /// Blocks of device memory allocated so far (for tests and the harness).
  std::size_t blocks() const noexcept;

  /// Stops the collector thread; every read still waiting, or made later, throws. Idempotent.
  void stop() noexcept;

 private:
  struct block_memory {
    timing_slot* slots = nullptr;  // block_slots slots, device memory
  };

  std::optional<std::uint32_t> take_block();  // caller holds mutex_
  /// Records the beacon of `batch`, which the caller has just closed (its state said so), and
  /// gives the batch to the collector thread; the records of its unused slots let their shares go.
  void hand_over(timing_batch<R>& batch) noexcept;
  void run();
  bool collect(timing_batch<R>& batch);  // one closed batch whose beacon has passed
  void fail_pending() noexcept;
  void mark_pending_failed() noexcept;    // caller holds mutex_
  typename R::event_handle take_event();  // caller holds mutex_

  const int device_;
  const std::shared_ptr<device_health<R>> health_;
  const std::uint32_t max_blocks_;

  mutable std::mutex mutex_;
  std::condition_variable work_;       // the collector waits for closed batches
  std::condition_variable collected_;  // reads wait for their records
  std::vector<block_memory> blocks_;   // guarded by mutex_
  std::vector<std::uint32_t> free_blocks_;
  std::vector<typename R::event_handle> free_events_;
  std::deque<timing_batch<R>*>
      closed_;  // in the order they closed, each holding the collector's share
  bool stopping_ = false;
  bool idle_ = false;   // the collector waits with no batch to poll: a close must wake it
  bool poked_ = false;  // a batch closed or a read waits: poll at once
  bool failed_ = false;

  // The collector thread's own: a stream the copies run on, and pinned memory for a block's copy
  // and for the zeros that reset it.
  typename R::stream_handle private_ = nullptr;
  timing_slot* staging_ = nullptr;
  timing_slot* zeros_ = nullptr;

  // stage()'s copies: pinned slots and the events behind them, taken and given back under mutex_.
  static constexpr int staged_copies = 64;
  timing_slot* staged_ = nullptr;  // staged_copies slots, pinned host memory
  std::array<typename R::event_handle, staged_copies> staged_events_{};
  std::vector<int> free_staged_;
  std::thread collector_;
};

/// `variable`=`value`: a multiple of timing_batch_capacity up to 65536, the most timed launches a
/// device keeps in flight (a test forces the budget's end with it). Throws configuration_error
/// naming the variable, the value and what it accepts.
std::uint32_t parse_timing_slots(std::string_view variable, std::string_view value);

/// `variable`'s value when set, else default_timing_slots. Throws as above.
std::uint32_t timing_slots_from_environment(std::string_view variable);

/// The window of one slot: the earliest entry and the latest exit over its lanes, or nothing when
/// no cube stamped it.
std::optional<device_window> fold(const timing_slot& slot);

// ---------------------------------------------------------------------------------------------
// The collector's members.

template <class R>
timing_collector<R>::timing_collector(int device, std::shared_ptr<device_health<R>> health,
                                      std::uint32_t slots)
    : device_{device}, health_{std::move(health)}, max_blocks_{slots / block_slots} {
  device_guard<R> on{device_};
  typename R::relaxed_capture_mode relaxed;
  check<R>(R::stream_create(&private_), "StreamCreateWithFlags", device_);
  void* staging = nullptr;
  check<R>(R::host_alloc(&staging, block_bytes), "HostAlloc", device_);
  staging_ = static_cast<timing_slot*>(staging);
  void* zeros = nullptr;
  check<R>(R::host_alloc(&zeros, block_bytes), "HostAlloc", device_);
  std::fill_n(static_cast<unsigned char*>(zeros), block_bytes, static_cast<unsigned char>(0));
  zeros_ = static_cast<timing_slot*>(zeros);
  void* staged = nullptr;
  check<R>(R::host_alloc(&staged, sizeof(timing_slot) * staged_copies), "HostAlloc", device_);
  staged_ = static_cast<timing_slot*>(staged);
  for (int i = staged_copies; i-- > 0;) {
    check<R>(R::event_create(&staged_events_[static_cast<std::size_t>(i)]), "EventCreateWithFlags",
             device_);
    free_staged_.push_back(i);
  }
  collector_ = std::thread{[this] {
    name_this_thread("lw-timing");
    run();
  }};
}

template <class R>
void timing_collector<R>::stop() noexcept {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  work_.notify_all();
  if (collector_.joinable()) collector_.join();
}

template <class R>
timing_collector<R>::~timing_collector() {
  stop();
  // Batches never read back (the collector stopped first): their records were marked failed, and
  // the collector's share goes; a measurement still held keeps its batch until it is let go.
  for (timing_batch<R>* batch : std::exchange(closed_, {})) batch->release(1);
  device_guard<R> on{device_};
  for (const auto& b : blocks_) (void)R::device_free(b.slots);
  for (typename R::event_handle e : free_events_) (void)R::event_destroy(e);
  (void)R::free_host(staging_);
  (void)R::free_host(zeros_);
  (void)R::free_host(staged_);
  for (typename R::event_handle e : staged_events_) (void)R::event_destroy(e);
  (void)R::stream_destroy(private_);
}

template <class R>
std::optional<std::uint32_t> timing_collector<R>::take_block() {
  if (!free_blocks_.empty()) {
    const std::uint32_t block = free_blocks_.back();
    free_blocks_.pop_back();
    return block;
  }
  if (blocks_.size() >= max_blocks_ || failed_) return std::nullopt;
  device_guard<R> on{device_};
  typename R::relaxed_capture_mode relaxed;
  void* memory = nullptr;
  if (R::device_malloc(&memory, block_bytes) != R::success) {
    R::clear_error();
    return std::nullopt;  // out of device memory: the launch goes untimed
  }
  // Zeroed by a copy on the private stream, waited for here: the slots are empty before any launch
  // can be given one.
  const typename R::error copied = R::copy_to_device_async(memory, zeros_, block_bytes, private_);
  if (copied != R::success || R::stream_synchronize(private_) != R::success) {
    R::clear_error();
    (void)R::device_free(memory);
    return std::nullopt;
  }
  blocks_.push_back(block_memory{static_cast<timing_slot*>(memory)});
  return static_cast<std::uint32_t>(blocks_.size() - 1);
}

template <class R>
typename R::event_handle timing_collector<R>::take_event() {
  if (!free_events_.empty()) {
    typename R::event_handle event = free_events_.back();
    free_events_.pop_back();
    return event;
  }
  device_guard<R> on{device_};
  typename R::event_handle event = nullptr;
  check<R>(R::event_create(&event), "EventCreateWithFlags", device_);
  return event;
}

template <class R>
std::optional<typename timing_collector<R>::lease> timing_collector<R>::acquire(
    std::shared_ptr<timing_batch<R>>& open, typename R::stream_handle stream, instant submitted,
    const std::shared_ptr<stream_reads>& reads) {
  for (;;) {
    if (open) {
      // The slot is this launch's once taken: its record is filled without a lock.
      if (const auto slot = open->state.take(timing_batch<R>::capacity)) {
        timing_record<R>& record = open->records[*slot];
        record.submitted = submitted;
        record.slot = open->slots + *slot;
        record.batch = open.get();
        lease taken{timing_target{record.slot}, &record, nullptr};
        if (*slot + 1 == timing_batch<R>::capacity) taken.filled = std::move(open);
        return taken;
      }
      open.reset();  // closed by a read, or by a capture: start another
    }
    auto batch = std::make_unique<timing_batch<R>>(*this);
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
    batch->reads = reads;
    // Shared only once it holds a block and a beacon. The owner's share is the shared_ptr's: when
    // the last copy goes, the batch is closed (if its owner left it open) and that share released.
    open = std::shared_ptr<timing_batch<R>>{batch.release(), [](timing_batch<R>* b) noexcept {
                                              b->collector.close(*b);
                                              b->release(1);
                                            }};
  }
}

template <class R>
void timing_collector<R>::hand_over(timing_batch<R>& batch) noexcept {
  const std::uint32_t used = batch.state.used();
  if (used > 0) {
    device_guard<R> on{device_};
    const typename R::error status = R::event_record(batch.beacon, batch.stream);
    if (status != R::success) {
      (void)health_->note(status, "EventRecord (a timing batch's beacon)");
      R::clear_error();
    }
  }
  // The collector's share, taken while the caller's keeps the batch alive.
  batch.holders.fetch_add(1, std::memory_order_relaxed);
  if (const std::uint32_t unused = timing_batch<R>::capacity - used; unused > 0) {
    batch.release(unused);
  }
  bool wake = false;
  {
    std::lock_guard lock{mutex_};
    closed_.push_back(&batch);
    poked_ = true;
    // A quarter of the device's blocks waiting to be read back: the host is far ahead of the
    // collector's polls, and its launches would soon go untimed.
    wake = idle_ || closed_.size() * 4 >= max_blocks_;
  }
  // A collector that is polling finds the batch at its next poll (within a millisecond); waking it
  // would cost the launching thread a system call every batch.
  if (wake) work_.notify_one();
}

template <class R>
void timing_collector<R>::close(timing_batch<R>& batch) noexcept {
  if (batch.state.close()) hand_over(batch);
}

template <class R>
void timing_collector<R>::launched(timing_record<R>& record) noexcept {
  timing_batch<R>& batch = *record.batch;
  // A reader flagged the batch while this launch was between its slot and its kernel: the kernel
  // is submitted now, so the beacon lands after it.
  if (batch.state.launched()) hand_over(batch);
}

template <class R>
void timing_collector<R>::let_go(timing_record<R>* record) noexcept {
  // Staged but dropped unread: its copy goes back once it has landed (one still in flight is left
  // out of use rather than waited for).
  const int copy = std::exchange(record->staged, -1);
  if (copy >= 0 && R::event_query(staged_events_[static_cast<std::size_t>(copy)]) == R::success) {
    std::lock_guard lock{mutex_};
    free_staged_.push_back(copy);
  }
  record->batch->release(1);
}

template <class R>
std::size_t timing_collector<R>::blocks() const noexcept {
  std::lock_guard lock{mutex_};
  return blocks_.size();
}

template <class R>
void timing_collector<R>::stage(timing_record<R>& record,
                                typename R::stream_handle stream) noexcept {
  int copy = -1;
  {
    std::lock_guard lock{mutex_};
    if (free_staged_.empty()) return;
    copy = free_staged_.back();
    free_staged_.pop_back();
  }
  const typename R::error copied =
      R::copy_to_host_async(staged_ + copy, record.slot, sizeof(timing_slot), stream);
  if (copied != R::success ||
      R::event_record(staged_events_[static_cast<std::size_t>(copy)], stream) != R::success) {
    R::clear_error();
    std::lock_guard lock{mutex_};
    free_staged_.push_back(copy);
    return;
  }
  record.staged = copy;
}

template <class R>
std::optional<device_window> timing_collector<R>::read_alone(timing_record<R>& record) {
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
  const typename R::error status =
      R::event_synchronize(staged_events_[static_cast<std::size_t>(copy)]);
  if (status != R::success) {
    (void)health_->note(status, "EventSynchronize (a timed launch read at once)");
    R::clear_error();
    return std::nullopt;  // wait() reports the device's fault
  }
  return fold(staged_[copy]);
}

template <class R>
std::optional<device_window> timing_collector<R>::wait(timing_record<R>& record,
                                                       std::string_view kernel) {
  if (record.state.load(std::memory_order_acquire) == timing_record<R>::pending) {
    // Not close(): another thread may be between taking a slot of this batch and submitting its
    // kernel, whose beacon must follow it (review-2026-12-01b finding 4).
    timing_batch<R>& batch = *record.batch;
    if (batch.state.request_close()) hand_over(batch);
    std::unique_lock lock{mutex_};
    poked_ = true;
    work_.notify_one();
    collected_.wait(lock, [&] {
      return record.state.load(std::memory_order_acquire) != timing_record<R>::pending || failed_;
    });
  }
  switch (record.state.load(std::memory_order_acquire)) {
    case timing_record<R>::collected:
      return record.window;
    case timing_record<R>::no_window:
      return std::nullopt;
    default:
      break;
  }
  health_->throw_if_failed();
  throw device_error{describe_timing_never_read(kernel, R::wording.api, device_)};
}

template <class R>
bool timing_collector<R>::collect(timing_batch<R>& batch) {
  timing_slot* const base = batch.slots;
  const std::uint32_t used = batch.state.used();  // fixed: the batch is closed
  const std::size_t bytes = sizeof(timing_slot) * used;
  if (bytes > 0) {
    typename R::error status = R::copy_to_host_async(staging_, base, bytes, private_);
    if (status == R::success) {
      status = R::copy_to_device_async(base, zeros_, bytes, private_);
    }
    if (status == R::success) status = R::stream_synchronize(private_);
    if (status != R::success) {
      (void)health_->note(status, "MemcpyAsync (reading deferred timing back)");
      fail_pending();
      return false;
    }
  }
  for (std::uint32_t i = 0; i < used; ++i) {
    timing_record<R>& record = batch.records[i];
    if (const auto window = fold(staging_[i])) {
      record.window = *window;
      record.state.store(timing_record<R>::collected, std::memory_order_release);
    } else {
      record.state.store(timing_record<R>::no_window, std::memory_order_release);
    }
  }
  std::lock_guard lock{mutex_};
  free_blocks_.push_back(batch.block);
  free_events_.push_back(batch.beacon);
  return true;
}

template <class R>
void timing_collector<R>::fail_pending() noexcept {
  std::lock_guard lock{mutex_};
  mark_pending_failed();
}

template <class R>
void timing_collector<R>::mark_pending_failed() noexcept {
  failed_ = true;
  for (const auto& batch : closed_) {
    for (std::uint32_t i = 0, used = batch->state.used(); i < used; ++i) {
      batch->records[i].state.store(timing_record<R>::failed, std::memory_order_release);
    }
  }
  collected_.notify_all();
}

template <class R>
void timing_collector<R>::run() {
  device_guard<R> on{device_};
  typename R::relaxed_capture_mode relaxed;
  // Polls the beacons of closed batches: short sleeps while kernels run, longer ones the longer
  // nothing passes, at once when a batch closes or a read is waiting.
  constexpr auto shortest = std::chrono::microseconds{20};
  constexpr auto longest = std::chrono::microseconds{1000};
  // With nothing to poll it goes on polling for this long after its last batch: a batch closed
  // meanwhile is found at the next poll, so the launching thread that closed it makes no system
  // call to wake it (one a batch otherwise, a few microseconds on the launching thread). Only
  // after a pause in timed launches does it sleep until woken.
  constexpr auto linger = std::chrono::milliseconds{100};
  auto pause = shortest;
  auto last_batch = std::chrono::steady_clock::now();
  std::unique_lock lock{mutex_};
  for (;;) {
    if (closed_.empty()) {
      if (std::chrono::steady_clock::now() - last_batch < linger) {
        work_.wait_for(lock, pause, [&] { return stopping_ || !closed_.empty(); });
        pause = std::min(pause * 2, longest);
        if (!stopping_ && closed_.empty()) continue;
      } else {
        idle_ = true;
        work_.wait(lock, [&] { return stopping_ || !closed_.empty(); });
        idle_ = false;
        pause = shortest;
      }
    }
    if (stopping_ || failed_) break;
    std::vector<timing_batch<R>*> pending{closed_.begin(), closed_.end()};
    lock.unlock();
    bool progressed = false;
    bool broken = false;
    for (const auto& batch : pending) {
      const typename R::error status =
          batch->state.used() == 0 ? R::success : R::event_query(batch->beacon);
      if (status == R::not_ready) continue;
      if (status != R::success) {
        (void)health_->note(status, "EventQuery (a timing batch's beacon)");
        fail_pending();
        R::clear_error();
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
      pause = shortest;
      last_batch = std::chrono::steady_clock::now();
      continue;
    }
    work_.wait_for(lock, pause, [&] { return stopping_ || poked_; });
    pause = std::exchange(poked_, false) ? shortest : std::min(pause * 2, longest);
  }
  // Stopped (at exit, or the device failed): whatever is still pending will never be read back.
  mark_pending_failed();
}

}  // namespace launchwatch::detail::gpu
