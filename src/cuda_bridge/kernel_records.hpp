// Device time of foreign launches, from CUPTI's concurrent-kernel activity records: the table of
// launches whose record is awaited, the collector thread that makes CUPTI hand buffers over, and
// the resolver a deferred measurement carries. CUPTI-free: CUPTI's buffer callbacks
// (activity_buffers.cpp) hand records in as plain kernel_records, and the table flushes through the
// function it is given, so it runs and is tested without CUDA (tests/cuda_bridge/fake_cupti.hpp).
//
// Facts this is built on (research/cuda-bridge.md §2, measured on the H200): CUPTI never delivers a
// buffer that is not full on its own, so someone must flush; a buffer that holds one running kernel
// withholds every record in it; a FORCED flush hands a running kernel's record back with zero
// timestamps and never again, so it is only used at teardown after the devices are idle; records
// are put on the steady clock by a timestamp callback registered before any kind is enabled.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <launchwatch/profile.hpp>

#include "core/interface/thread_counts.hpp"
#include "correlation_epochs.hpp"
#include "record_holder.hpp"

namespace launchwatch::detail::cuda_bridge {

/// One kernel record, as the table hands it on to what else wants records (graph replays).
struct kernel_record {
  /// CUPTI's 32-bit correlation id as its source gives it; on_records() widens it to launchwatch's
  /// 64-bit id (correlation_epochs.hpp) before anything else reads it.
  std::uint64_t correlation = 0;
  std::uint64_t graph_node = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint64_t start = 0;  // steady-clock nanoseconds; 0 when CUPTI did not measure it
  std::uint64_t end = 0;
  /// The kernel's name as CUPTI's record gives it (null when unknown); valid only while the record
  /// is handled (on_records), so whatever keeps it interns it. Read for a replayed kernel whose
  /// node the bridge never saw.
  const char* name = nullptr;
};

/// A record's window as ticks: its timestamps are steady-clock nanoseconds (the clock CUPTI is told
/// to stamp with), so they become `instant`s unmapped.
profile_ticks steady_window(std::uint64_t start, std::uint64_t end) noexcept;

/// Counts of what happened to awaited records.
struct record_counts {
  std::uint64_t delivered = 0;
  std::uint64_t missing = 0;
  std::uint64_t dropped = 0;
};

/// The awaited records and the collector thread. Shared by the bridge and by every deferred
/// measurement it handed out, so a measurement read after the bridge is gone still answers.
///
/// Thread safety: every member is safe from any thread. A launch's own steps (await, adopt, and the
/// take or forget of a record that arrived) take no lock while its entry is in the ring (`slot`):
/// they claim and change the slot's state word with compare-and-swap, so a launching thread never
/// waits for the thread that delivers a buffer (which applies it under the table's lock), nor for
/// a collector's or reader's scan. Everything else, and every entry in the overflow map, goes
/// through the lock.
class kernel_records : public std::enable_shared_from_this<kernel_records> {
 public:
  /// How the table asks for records: `flush(false)` hands over completed buffers (CUPTI's
  /// cuptiActivityFlushAll(0)); `flush(true)` every buffer, complete or not (FORCED), only at
  /// close(), after the devices are idle. Records come back through on_records(), on any thread.
  using flusher = std::function<void(bool forced)>;

  /// Records that are not awaited (graph replays' nodes) are offered to `others`, on the thread
  /// that delivers the buffer, with no lock of this table held; while `others_pending` says more
  /// of them are due, the collector keeps flushing.
  kernel_records(std::chrono::milliseconds flush_period, std::chrono::milliseconds timeout,
                 flusher flush, std::function<void(const kernel_record&)> others,
                 std::function<bool()> others_pending);
  ~kernel_records();
  kernel_records(const kernel_records&) = delete;
  kernel_records& operator=(const kernel_records&) = delete;

  /// Starts the collector thread. Call once, after the records' source is ready to be flushed.
  void start();

  /// CUPTI's 32-bit correlation id of a launch or graph launch, seen at its ENTER, widened to the
  /// 64-bit id every other member takes (correlation_epochs.hpp). Cost: a relaxed load and at most
  /// a compare-and-swap.
  std::uint64_t widen_at_enter(std::uint32_t correlation) noexcept {
    return epochs_.widen_at_enter(correlation);
  }

  /// The newest widened correlation id seen at a launch's ENTER.
  [[nodiscard]] std::uint64_t newest_launch() const noexcept { return epochs_.newest(); }

  /// Notes that the launch with `correlation` wants its record. Call at ENTER, before the launch is
  /// submitted (its record may be delivered at once); adopt() at EXIT. Cost: no lock: a count on
  /// this thread's line (thread_counts) and a compare-and-swap on its ring slot; when that slot is
  /// still taken, the lock and a node of the overflow map (an allocation; see `slot`).
  void await(std::uint64_t correlation);
  /// At the launch's EXIT: its measurement now owns the entry (take() or forget() ends it). Returns
  /// false when the entry was forgotten meanwhile (forget_unadopted()). Cost: no lock for an entry
  /// in the ring: a compare-and-swap on its slot and a count on this thread's line; the lock
  /// otherwise.
  bool adopt(std::uint64_t correlation) noexcept;
  /// Forgets every entry no measurement owns yet: launch callbacks were turned off, so a launch
  /// caught between its ENTER and EXIT never gets its EXIT, and nobody will read its record. An
  /// entry whose await() is still under way is left to its launch (as one awaited just after).
  /// Cost: two sums of per-thread counts when no launch is between the two; else a scan of the
  /// table.
  void forget_unadopted() noexcept;
  /// The launch's record will not be read (its measurement was dropped unread, or it never ran).
  /// Cost: no lock once its record arrived (a compare-and-swap); the lock otherwise.
  void forget(std::uint64_t correlation) noexcept;
  /// The launch's window, waiting for it at most the timeout (asking the collector to flush at
  /// once); empty when no record came or it carried no timestamps. Counts and warns as behaviour 8
  /// says. A wait that times out gives up every record awaited before it began, so missing records
  /// cost their readers one timeout together, never one each. Cost: no lock once its record arrived
  /// with timestamps (a compare-and-swap and an atomic increment); the lock otherwise.
  std::optional<profile_ticks> take(std::uint64_t correlation);

  /// Where the awaited entries stand now: flush_until_delivered() gives up only entries awaited
  /// before it (an entry whose launch's ENTER is under way while it is taken may be counted either
  /// way). Take it before waiting for the devices. It is the newest correlation id seen at a
  /// launch's ENTER, plus one: ids grow with every CUDA call, so an entry's own id orders it.
  [[nodiscard]] std::uint64_t mark() const noexcept;
  /// Flushes completed buffers now (never FORCED). Returns once CUPTI handed them over.
  void flush_completed();
  /// Whether the devices were waited for before flush_until_delivered.
  enum class devices { idle, maybe_busy };
  /// For cuda_bridge::flush(): flushes until no awaited record is missing, or `patience` passed.
  /// With the devices `idle` (waited for after `idle_from` was marked), when flushes bring no
  /// record while some are missing for 250 ms, or at the deadline, every entry awaited before
  /// `idle_from` still missing is lost: counted, said once, and its take() answers at once; the
  /// flushing stops there too while only `others_pending` waits. With the devices `maybe_busy`
  /// (a stream capture forbade waiting for them) nothing is given up: a missing record may be of a
  /// kernel still running, and stays awaited for its reader and the collector.
  void flush_until_delivered(std::chrono::milliseconds patience, std::uint64_t idle_from,
                             devices state = devices::idle);
  /// Teardown, after the devices are idle: stops the collector, FORCED-flushes, and answers every
  /// later take() from what arrived.
  void close();

  record_counts counts() const noexcept;

  /// Whether CUPTI's records reach this table or another CUPTI client holds them: records given up
  /// while none arrived and CUPTI counted none dropped make it `stopped_coming`; a record of a
  /// launch after that brings them back. While they are elsewhere the collector flushes once a
  /// second, so such a record is seen.
  [[nodiscard]] record_holder& holder() noexcept { return holder_; }
  [[nodiscard]] const record_holder& holder() const noexcept { return holder_; }

  /// A buffer's kernel records, and how many records its source says it dropped (any thread).
  /// Cost to launching threads: none of its lock (a launch's own steps take none); its stores to
  /// the slots of arrived records.
  void on_records(std::span<const kernel_record> kernels, std::size_t dropped);

 private:
  /// An entry of the overflow map (guarded by mutex_).
  struct awaited {
    bool arrived = false;
    /// Given up (give_up_locked): take() answers empty at once; already counted missing.
    bool lost = false;
    /// A measurement owns the entry (adopt()).
    bool adopted = false;
    std::uint64_t start = 0;
    std::uint64_t end = 0;
  };
  /// An entry of the ring: correlation ids grow by one per CUDA call (every API call of the
  /// process, not only launches), so launches awaited at once fall on distinct slots while fewer
  /// than 65 536 calls separate the oldest from the newest, and awaiting one then costs no
  /// allocation and no lock. A slot still taken when its id comes round again (65 536 calls later)
  /// sends the newcomer to the overflow map: an allocation per entry, freed when its record is
  /// taken or forgotten (the map's buckets stay at their largest). An entry lives exactly as long
  /// as the record_resolver its launch's measurement carries: take() when the measurement is read,
  /// forget() when it is dropped unread; nothing else keeps one. So how many are awaited at once is
  /// how many measurements the observer holds unread: every launch of the pass under a full
  /// attribution (the overflow grows with the run), and under an aggregate-only one at most 4 096
  /// per launching thread (each thread's fold reads them), so the overflow is used only with 16
  /// or more launching threads or more than 16 CUDA calls per launch, and stays bounded.
  ///
  /// The slot's `state` says whose it is and how far its entry got: 0 when free, else the lower 48
  /// bits of the entry's correlation id (two ids 2^48 CUDA calls apart, 9 years at 1 M a second,
  /// are never awaited at once; the id also orders entries, for give_up_locked) and the flags
  /// below. Who changes it, and how:
  ///   - await() counts the entry awaited, then claims a free slot and publishes it in one
  ///     compare-and-swap (0 to the id with `taken_bit`, release);
  ///   - adopt() adds `adopted_bit`, by compare-and-swap (the one change made without the lock to
  ///     an entry not yet arrived or lost);
  ///   - on_records() writes `start` and `end`, then adds `arrived_bit` (release), under the lock;
  ///     give_up_locked() adds `lost_bit`, under the lock;
  ///   - an entry is freed (state 0, release) without the lock only by its owner, once arrived or
  ///     lost (take(), forget()), when no other step changes it any more; every other free is
  ///     under the lock (an entry not yet arrived or lost: its record may be being applied).
  /// So a step that reads the slot's other words first acquires `state` naming its entry, and
  /// confirms with a compare-and-swap of that same state when another thread may free it.
  /// Two to a cache line.
  struct alignas(32) slot {
    std::atomic<std::uint64_t> state{0};
    /// The record's timestamps, once `arrived_bit` is set.
    std::atomic<std::uint64_t> start{0};
    std::atomic<std::uint64_t> end{0};
  };
  static constexpr std::size_t ring_size = std::size_t{1} << 16;
  /// The parts of a slot's `state`: the entry's id, and its flags (see `slot`).
  static constexpr std::uint64_t id_bits = (std::uint64_t{1} << 48) - 1;
  static constexpr std::uint64_t taken_bit = std::uint64_t{1} << 49;
  static constexpr std::uint64_t adopted_bit = std::uint64_t{1} << 50;
  static constexpr std::uint64_t arrived_bit = std::uint64_t{1} << 51;
  static constexpr std::uint64_t lost_bit = std::uint64_t{1} << 52;

  /// What is known of an entry (from its slot or the overflow map).
  struct entry_view {
    bool found = false;
    bool arrived = false;
    bool lost = false;
    bool adopted = false;
    std::uint64_t start = 0;
    std::uint64_t end = 0;

    /// A ring entry whose published `state` was read from `s` (mutex_ held, so its timestamps
    /// are the record's, or zero).
    static entry_view of(std::uint64_t state, const slot& s) noexcept {
      return {true,
              (state & arrived_bit) != 0,
              (state & lost_bit) != 0,
              (state & adopted_bit) != 0,
              s.start.load(std::memory_order_relaxed),
              s.end.load(std::memory_order_relaxed)};
    }
    /// An entry of the overflow map.
    static entry_view of(const awaited& e) noexcept {
      return {true, e.arrived, e.lost, e.adopted, e.start, e.end};
    }
  };

  /// The ring slot of `correlation` (whoever holds it now).
  slot& slot_of(std::uint64_t correlation) noexcept { return ring_[correlation & (ring_size - 1)]; }
  /// Whether a slot's `state` is the published entry of `correlation`.
  static bool holds(std::uint64_t state, std::uint64_t correlation) noexcept {
    return (state & taken_bit) != 0 && (state & id_bits) == (correlation & id_bits);
  }
  /// Whether the entry a slot's `state` names was awaited before `mark` (mark()): its id is
  /// older, compared modulo 2^48 (ids awaited at once are much nearer than 2^47).
  static bool awaited_before(std::uint64_t state, std::uint64_t mark) noexcept {
    constexpr std::uint64_t half = (id_bits >> 1) + 1;
    const std::uint64_t behind = (mark - state) & id_bits;  // the flags above the id drop out
    return behind != 0 && behind < half;
  }
  /// The entry of `correlation` (mutex_ held: only adopt() may change it meanwhile).
  entry_view look_locked(std::uint64_t correlation) noexcept;
  /// Ends the entry of `correlation` (mutex_ held), counting it settled and adopted when it was
  /// not yet. Returns what it was, its timestamps included.
  entry_view erase_locked(std::uint64_t correlation) noexcept;
  /// Gives up every entry awaited before `before` whose record is missing: lost, counted missing,
  /// no longer outstanding. Returns how many.
  std::size_t give_up_locked(std::uint64_t before) noexcept;
  /// Awaited entries whose record has not arrived (nor was given up, nor the entry ended).
  std::uint64_t outstanding() const noexcept;
  /// Awaited entries not yet adopted (nor ended).
  std::uint64_t unadopted() const noexcept;
  /// Says once that `lost` measurements were given up, and why.
  void warn_lost(std::size_t lost, const char* why);
  void warn_missing(std::uint64_t correlation, const char* why);
  /// Says `what` with the counts so far: a warning the first time in the process, then debug.
  void say_missing(const std::string& what);

  void collect();

  const std::chrono::milliseconds flush_period_;
  const std::chrono::milliseconds timeout_;
  flusher flush_;
  std::function<void(const kernel_record&)> others_;
  std::function<bool()> others_pending_;

  const std::unique_ptr<slot[]> ring_{new slot[ring_size]};
  /// The counts launching threads change, each thread on its own line (a locked increment of a
  /// shared counter was two of a deferred launch's locked instructions): entries awaited so far,
  /// and entries adopted or ended before they were (awaited - adopted: launches between ENTER and
  /// EXIT). Read by the collector, flushes and teardown.
  enum count : std::size_t { awaited_count, adopted_count };
  thread_counts<2> counts_by_thread_;
  /// Measurements delivered (record_counts::delivered): changed by whoever reads them, which under
  /// `launchwatch run` is the attribution's fold thread while the launching thread goes on. On the
  /// launching threads' line it made each of their awaits wait for the line to come back.
  alignas(64) std::atomic<std::uint64_t> delivered_{0};
  /// Entries whose record arrived or was given up, or that ended before either: awaited - settled
  /// are outstanding, and the collector flushes while there are any.
  alignas(64) std::atomic<std::uint64_t> settled_{0};
  correlation_epochs epochs_;
  record_holder holder_;

  alignas(64) mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::condition_variable wake_collector_;
  std::unordered_map<std::uint64_t, awaited> overflow_;
  /// Kernel records handed over so far, awaited or not: whether a flush brought anything.
  std::uint64_t received_ = 0;
  /// take() calls waiting for a record.
  std::size_t waiting_ = 0;
  bool urgent_ = false;
  bool closed_ = false;
  bool stopping_ = false;
  /// Missing and dropped (delivered is delivered_).
  record_counts counts_;
  std::thread collector_;
};

/// What a deferred measurement of a foreign launch carries: the table and the launch's (64-bit)
/// correlation id. Small (three words) so a profile_duration holds it without allocating; lets its
/// record go when dropped unread.
class record_resolver {
 public:
  record_resolver(std::shared_ptr<kernel_records> records, std::uint64_t correlation) noexcept
      : records_{std::move(records)}, correlation_{correlation} {}
  record_resolver(record_resolver&& other) noexcept
      : records_{std::move(other.records_)}, correlation_{other.correlation_} {}
  record_resolver& operator=(record_resolver&&) = delete;
  record_resolver(const record_resolver&) = delete;
  record_resolver& operator=(const record_resolver&) = delete;
  ~record_resolver() {
    if (records_) records_->forget(correlation_);
  }

  std::optional<profile_ticks> operator()() {
    auto records = std::move(records_);
    return records->take(correlation_);
  }

 private:
  std::shared_ptr<kernel_records> records_;
  std::uint64_t correlation_;
};

}  // namespace launchwatch::detail::cuda_bridge
