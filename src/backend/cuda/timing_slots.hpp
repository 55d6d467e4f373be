// Deferred timing's storage for one CUDA device: the device slots timed launches stamp, the host
// records that hold each launch's window once read back, and the collector that reads them back in
// bulk, off the issuing thread and off the user's stream.
//
// "Timing slots" is one concept in every backend (cpu/timing_slots.hpp, vulkan/timing_slots.hpp):
// the bounded places where the device writes a timed launch's two stamps, lent to the launch from
// its submission until its measurement is read back. Here a slot is a `cuda_timing_slot` in device
// memory, stamped by the launch's own kernel with %globaltimer, and slots go in batches.
#pragma once

#include <cuda_runtime_api.h>

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

#include <launchwatch/detail/cuda_entry.hpp>
#include <launchwatch/profile.hpp>

#include "device_health.hpp"

namespace launchwatch::detail::cuda {

/// A launch's window as the device stamped it, in global-timer nanoseconds.
struct device_window {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
};

struct timing_batch;
class timing_collector;

/// One timed launch's measurement on the host: filled by the collector once the launch has ended,
/// read by whoever holds its profile_duration.
///
/// Lives inside its batch (no pool, no lock to take one): about 64 bytes of host memory, so a pass
/// may keep millions unread; the device slot it was stamped in goes back as soon as the batch is
/// read back, and the batch's host memory once its last measurement is let go.
struct timing_record {
  enum : std::uint32_t { pending = 0, collected = 1, no_window = 2, failed = 3 };
  std::atomic<std::uint32_t> state{pending};
  device_window window;
  /// When the launch was submitted, on the host: a mapped window never starts before it.
  instant submitted{};
  /// The slot it was stamped in, for a read of it alone.
  cuda_timing_slot* slot = nullptr;
  /// Where stage() copied the slot in the launch's own stream, when it was (an index into the
  /// collector's staged copies), or -1.
  int staged = -1;
  /// The batch it sits in: a read that finds it pending closes the batch, and letting it go
  /// releases its share of the batch.
  timing_batch* batch = nullptr;
};

/// Up to `capacity` timed launches of one stream, in issue order, stamped into one block of
/// consecutive slots; read back together after the stream passes the batch's beacon (an event with
/// timing disabled, recorded after the batch's last launch: measured free on an H200).
///
/// Its host memory is held by the stream that fills it (through a shared_ptr, one holder however
/// many copies), by the collector from its close until it is read back (one), and by each launch's
/// measurement (one each, taken with the slot at no extra cost: every record starts held, and those
/// a batch closes without are released at its close). The last holder frees it.
struct timing_batch {
  static constexpr std::uint32_t capacity = 64;

  explicit timing_batch(timing_collector& owner) noexcept : collector{owner} {}
  timing_batch(const timing_batch&) = delete;
  timing_batch& operator=(const timing_batch&) = delete;

  /// Closes the batch, if its owner let it go open, before releasing the owner's share.
  timing_collector& collector;

  std::mutex mutex;
  bool open = true;            // guarded by mutex: launches may still join
  cudaStream_t stream = nullptr;
  cudaEvent_t beacon = nullptr;
  std::uint32_t block = 0;
  cuda_timing_slot* slots = nullptr;  // the block's first slot, in device memory
  std::uint32_t used = 0;      // guarded by mutex
  /// The owner's share, the collector's once closed, one per record; the batch is freed at zero.
  std::atomic<std::uint32_t> holders{capacity + 1};
  std::array<timing_record, capacity> records{};

  /// Releases `count` holders; the last frees the batch. Never throws.
  void release(std::uint32_t count) noexcept {
    if (holders.fetch_sub(count, std::memory_order_acq_rel) == count) delete this;
  }
};

/// Timed launches' slots, records and their collection, for one device.
///
/// A stream keeps an open batch; a timed launch takes the batch's next slot and record (the
/// batch's lock; a block of device memory is allocated only while the device has fewer than
/// `max_blocks`). The batch closes when it is full, when its stream begins a capture or goes, or
/// when a read finds its record still pending: then a beacon is recorded on the stream and the
/// batch handed to the collector thread, which waits for the beacon on a private stream, copies
/// the block to the host, zeroes it with a copy (a memset may run as a kernel, on the user's SMs)
/// and folds each slot's lanes into its record. Nothing is added between the user's kernels but
/// one beacon per batch.
///
/// Bounded: at most `max_blocks` blocks of device memory (8 MiB) however long the pass; when every
/// block is in flight, acquire() says so and the launch goes untimed.
///
/// Thread safety: every member may be called from any thread.
class timing_collector {
 public:
  /// Slots per block, a batch's worth.
  static constexpr std::uint32_t block_slots = timing_batch::capacity;
  /// The slots deferred timing takes on one device unless LAUNCHWATCH_CUDA_TIMING_SLOTS says
  /// otherwise: 32 blocks of 256 KiB, 8 MiB, as many launches as CUDA queues on a stream and more.
  static constexpr std::uint32_t default_slots = 2048;

  /// What a timed launch stamps into, and where its measurement will be. `filled` is the batch
  /// this launch filled, which the caller closes once the launch is submitted (its beacon must come
  /// after it).
  struct lease {
    cuda_timing_target target;
    timing_record* record = nullptr;
    std::shared_ptr<timing_batch> filled;
  };

  /// `slots`: the most slots of device memory it may take (a multiple of block_slots, see
  /// timing_slots_from_environment()).
  timing_collector(int device, std::shared_ptr<device_health> health, std::uint32_t slots);
  /// Stops the collector thread. Precondition: no timed launch is still running.
  ~timing_collector();
  timing_collector(const timing_collector&) = delete;
  timing_collector& operator=(const timing_collector&) = delete;

  /// A slot and a record for a timed launch on `stream`, whose open batch is `open` (made or
  /// replaced here). Nothing when every block is in flight: the launch then goes untimed.
  /// Precondition: the caller holds the stream's lock and the stream is not capturing.
  /// Cost: the batch's lock; every `block_slots` launches, a new batch (an allocation of about
  /// 4 KiB), the device's lock and a block from the pool (a device allocation while fewer than the
  /// budget's exist). The caller closes a batch the launch filled (a beacon) after submitting it.
  std::optional<lease> acquire(std::shared_ptr<timing_batch>& open, cudaStream_t stream,
                               instant submitted);

  /// Closes `batch` if still open: records its beacon on its stream and hands it to the collector.
  /// Precondition (from a stream): its lock is held; (from a read): none. The caller holds a share
  /// of the batch (its owner's, or a record's).
  /// Cost: the batch's lock, an event record and the device's lock; the collector thread is woken
  /// only when it is idle (while it polls, it finds the batch at its next poll).
  void close(timing_batch& batch) noexcept;
  void close(const std::shared_ptr<timing_batch>& batch) noexcept { close(*batch); }

  /// Blocks until `record` is collected, closing its batch if it is still open; returns its window,
  /// or nothing when the launch left none. Throws device_error (naming `kernel`) when the device
  /// failed before the window was read.
  std::optional<device_window> wait(timing_record& record, std::string_view kernel);

  /// For a launch whose measurement is read right after it (resolved timing), where waiting for a
  /// batch would cost more than the kernel: queues a copy of its slot to pinned host memory and an
  /// event behind it, in the launch's own stream, so one wait on the event brings both. Does
  /// nothing when every staged copy is in use (the read then goes through its batch).
  /// Precondition: the caller holds the stream's lock, right after submitting the launch.
  void stage(timing_record& record, cudaStream_t stream) noexcept;

  /// Reads `record`'s window from its staged copy, waiting for the copy's event. Nothing when it
  /// was not staged: then wait() has it.
  std::optional<device_window> read_alone(timing_record& record);

  /// Says the measurement of `record` is done with it (read or dropped): its share of the batch is
  /// released, and a staged copy it left goes back. Never throws.
  void let_go(timing_record* record) noexcept;

  /// Blocks of device memory allocated so far (for tests and the harness).
  std::size_t blocks() const noexcept;

  /// Stops the collector thread; every read still waiting, or made later, throws. Idempotent.
  void stop() noexcept;

 private:
  struct block_memory {
    cuda_timing_slot* slots = nullptr;  // block_slots slots, device memory
  };

  std::optional<std::uint32_t> take_block();  // caller holds mutex_
  void run();
  bool collect(timing_batch& batch);  // one closed batch whose beacon has passed
  void fail_pending() noexcept;
  void mark_pending_failed() noexcept;  // caller holds mutex_
  cudaEvent_t take_event();  // caller holds mutex_

  const int device_;
  const std::shared_ptr<device_health> health_;
  const std::uint32_t max_blocks_;

  mutable std::mutex mutex_;
  std::condition_variable work_;       // the collector waits for closed batches
  std::condition_variable collected_;  // reads wait for their records
  std::vector<block_memory> blocks_;   // guarded by mutex_
  std::vector<std::uint32_t> free_blocks_;
  std::vector<cudaEvent_t> free_events_;
  std::deque<timing_batch*> closed_;  // in the order they closed, each holding the collector's share
  bool stopping_ = false;
  bool idle_ = false;   // the collector waits with no batch to poll: a close must wake it
  bool poked_ = false;  // a batch closed or a read waits: poll at once
  bool failed_ = false;

  // The collector thread's own: a stream the copies run on, and pinned memory for a block's copy
  // and for the zeros that reset it.
  cudaStream_t private_ = nullptr;
  cuda_timing_slot* staging_ = nullptr;
  cuda_timing_slot* zeros_ = nullptr;

  // stage()'s copies: pinned slots and the events behind them, taken and given back under mutex_.
  static constexpr int staged_copies = 64;
  cuda_timing_slot* staged_ = nullptr;  // staged_copies slots, pinned host memory
  std::array<cudaEvent_t, staged_copies> staged_events_{};
  std::vector<int> free_staged_;
  std::thread collector_;
};

/// LAUNCHWATCH_CUDA_TIMING_SLOTS=`value`: a multiple of 64 from 64 to 65536, the most timed
/// launches a device keeps in flight (a test forces the budget's end with it). Throws
/// configuration_error naming the variable, the value and what it accepts.
std::uint32_t parse_timing_slots(std::string_view value);

/// The variable's value when set, else timing_collector::default_slots. Throws as above.
std::uint32_t timing_slots_from_environment();

}  // namespace launchwatch::detail::cuda
