// The awaited table of kernel records and its collector thread (kernel_records.hpp); CUPTI-free.
#include "kernel_records.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/interface/diagnostics.hpp"
#include "core/interface/thread_name.hpp"

namespace launchwatch::detail::cuda_bridge {
profile_ticks steady_window(std::uint64_t start, std::uint64_t end) noexcept {
  const auto at = [](std::uint64_t nanoseconds) {
    return instant{std::chrono::duration_cast<instant::duration>(
        std::chrono::nanoseconds{static_cast<std::int64_t>(nanoseconds)})};
  };
  return profile_ticks::from_start_end(at(start), at(end));
}

kernel_records::kernel_records(std::chrono::milliseconds flush_period,
                               std::chrono::milliseconds timeout, flusher flush,
                               std::function<void(const kernel_record&)> others,
                               std::function<bool()> others_pending)
    : flush_period_{flush_period},
      timeout_{timeout},
      flush_{std::move(flush)},
      others_{std::move(others)},
      others_pending_{std::move(others_pending)} {}

kernel_records::~kernel_records() {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  wake_collector_.notify_all();
  if (collector_.joinable()) collector_.join();
}

void kernel_records::start() {
  collector_ = std::thread{[this] {
    name_this_thread("lw-records");
    collect();
  }};
}

std::uint64_t kernel_records::outstanding() const noexcept {
  // settled_ first: every entry counted settled was counted awaited before (its slot or map entry
  // was seen, which its await published after counting it), so the later sum of the awaited counts
  // is never the smaller.
  const std::uint64_t settled = settled_.load(std::memory_order_acquire);
  const std::uint64_t awaits = counts_by_thread_.sum(awaited_count);
  return awaits > settled ? awaits - settled : 0;
}

std::uint64_t kernel_records::unadopted() const noexcept {
  // Adopted first, for the same reason.
  const std::uint64_t adopted = counts_by_thread_.sum(adopted_count);
  const std::uint64_t awaits = counts_by_thread_.sum(awaited_count);
  return awaits > adopted ? awaits - adopted : 0;
}

kernel_records::entry_view kernel_records::look_locked(std::uint64_t correlation) noexcept {
  const slot& s = slot_of(correlation);
  if (const std::uint64_t state = s.state.load(std::memory_order_acquire);
      holds(state, correlation)) {
    // Under the lock only adopt() changes a published entry not yet arrived or lost, and nobody
    // one that is: `start` and `end` are the record's.
    return entry_view::of(state, s);
  }
  const auto found = overflow_.find(correlation);
  return found != overflow_.end() ? entry_view::of(found->second) : entry_view{};
}

kernel_records::entry_view kernel_records::erase_locked(std::uint64_t correlation) noexcept {
  entry_view was;
  slot& s = slot_of(correlation);
  std::uint64_t state = s.state.load(std::memory_order_acquire);
  bool in_ring = false;
  // A compare-and-swap, not a store: adopt() may be adding its flag meanwhile.
  while (holds(state, correlation)) {
    if (s.state.compare_exchange_weak(state, 0, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      // Its timestamps stay: only on_records() writes them, under the lock held here.
      was = entry_view::of(state, s);
      in_ring = true;
      break;
    }
  }
  if (!in_ring) {
    const auto found = overflow_.find(correlation);
    if (found == overflow_.end()) return was;
    was = entry_view::of(found->second);
    overflow_.erase(found);
  }
  if (!was.arrived && !was.lost) settled_.fetch_add(1, std::memory_order_release);
  if (!was.adopted) counts_by_thread_.add(adopted_count);
  return was;
}

void kernel_records::await(std::uint64_t correlation) {
  // Counted before it is published, so whoever sees the entry sees it counted.
  counts_by_thread_.add(awaited_count);
  slot& s = slot_of(correlation);
  std::uint64_t free = 0;
  // Acquire: the slot's last owner freed it with a release, so its reads of the slot are over.
  // Release: the count above is seen by whoever sees the entry.
  if (s.state.compare_exchange_strong(free, (correlation & id_bits) | taken_bit,
                                      std::memory_order_acq_rel, std::memory_order_relaxed)) {
    return;
  }
  std::lock_guard lock{mutex_};
  overflow_.insert_or_assign(correlation, awaited{});
}

bool kernel_records::adopt(std::uint64_t correlation) noexcept {
  slot& s = slot_of(correlation);
  std::uint64_t state = s.state.load(std::memory_order_acquire);
  while (holds(state, correlation)) {
    if ((state & adopted_bit) != 0) return true;
    if (s.state.compare_exchange_weak(state, state | adopted_bit, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      counts_by_thread_.add(adopted_count);
      return true;
    }
  }
  // Not in the ring: in the overflow map, or forgotten (forget_unadopted()).
  std::lock_guard lock{mutex_};
  const auto found = overflow_.find(correlation);
  if (found == overflow_.end()) return false;
  if (!found->second.adopted) counts_by_thread_.add(adopted_count);
  found->second.adopted = true;
  return true;
}

void kernel_records::forget_unadopted() noexcept {
  std::lock_guard lock{mutex_};
  if (unadopted() == 0) return;
  std::uint64_t settled = 0;
  std::uint64_t forgotten = 0;
  for (std::size_t i = 0; i < ring_size; ++i) {
    slot& s = ring_[i];
    std::uint64_t state = s.state.load(std::memory_order_acquire);
    // Published and not adopted; the compare-and-swap loses only to adopt(), which then owns it.
    while ((state & taken_bit) != 0 && (state & adopted_bit) == 0) {
      if (s.state.compare_exchange_weak(state, 0, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
        if ((state & (arrived_bit | lost_bit)) == 0) ++settled;
        ++forgotten;
        break;
      }
    }
  }
  for (auto it = overflow_.begin(); it != overflow_.end();) {
    if (it->second.adopted) {
      ++it;
      continue;
    }
    if (!it->second.arrived && !it->second.lost) ++settled;
    ++forgotten;
    it = overflow_.erase(it);
  }
  settled_.fetch_add(settled, std::memory_order_release);
  counts_by_thread_.add(adopted_count, forgotten);
}

void kernel_records::forget(std::uint64_t correlation) noexcept {
  slot& s = slot_of(correlation);
  std::uint64_t state = s.state.load(std::memory_order_acquire);
  // Adopted and settled: nothing else changes the entry any more, so its owner frees it unlocked.
  constexpr std::uint64_t settled = arrived_bit | lost_bit;
  if (holds(state, correlation) && (state & adopted_bit) != 0 && (state & settled) != 0 &&
      s.state.compare_exchange_strong(state, 0, std::memory_order_release,
                                      std::memory_order_relaxed)) {
    return;
  }
  std::lock_guard lock{mutex_};
  (void)erase_locked(correlation);
}

std::size_t kernel_records::give_up_locked(std::uint64_t before) noexcept {
  std::size_t lost = 0;
  for (std::size_t i = 0; i < ring_size; ++i) {
    slot& s = ring_[i];
    std::uint64_t state = s.state.load(std::memory_order_acquire);
    while ((state & taken_bit) != 0 && (state & (arrived_bit | lost_bit)) == 0) {
      if (!awaited_before(state, before)) break;
      if (s.state.compare_exchange_weak(state, state | lost_bit, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
        ++lost;
        break;
      }
    }
  }
  for (auto& [correlation, entry] : overflow_) {
    if (entry.arrived || entry.lost || correlation >= before) continue;
    entry.lost = true;
    ++lost;
  }
  settled_.fetch_add(lost, std::memory_order_release);
  counts_.missing += lost;
  return lost;
}

std::optional<profile_ticks> kernel_records::take(std::uint64_t correlation) {
  {
    // The usual read, once the record arrived: no lock. Only the owner frees an arrived entry,
    // and nothing else changes it; a record with no timestamps is said under the lock below.
    slot& s = slot_of(correlation);
    std::uint64_t state = s.state.load(std::memory_order_acquire);
    if (holds(state, correlation) && (state & arrived_bit) != 0) {
      const std::uint64_t start = s.start.load(std::memory_order_relaxed);
      const std::uint64_t end = s.end.load(std::memory_order_relaxed);
      if (start != 0 && end != 0 && end >= start &&
          s.state.compare_exchange_strong(state, 0, std::memory_order_release,
                                          std::memory_order_relaxed)) {
        if ((state & adopted_bit) == 0) counts_by_thread_.add(adopted_count);
        delivered_.fetch_add(1, std::memory_order_relaxed);
        return steady_window(start, end);
      }
    }
  }
  std::unique_lock lock{mutex_};
  entry_view entry = look_locked(correlation);
  if (!entry.found) {
    ++counts_.missing;
    lock.unlock();
    warn_missing(correlation, "was never awaited");
    return std::nullopt;
  }
  std::size_t given_up = 0;
  bool none_came = false;
  if (!entry.arrived && !entry.lost && !closed_) {
    // Everything awaited before this wait began is given up with it when it times out: the
    // records that did not come in one timeout are not coming (another CUPTI client took them,
    // CUPTI dropped them), and each of their readers must not wait a timeout of its own.
    const std::uint64_t awaited_before = mark();
    const std::uint64_t received_before = received_;
    const std::uint64_t dropped_before = counts_.dropped;
    urgent_ = true;
    ++waiting_;
    wake_collector_.notify_one();
    if (!arrived_.wait_for(lock, timeout_, [&] {
          entry = look_locked(correlation);
          return entry.arrived || entry.lost || closed_;
        })) {
      given_up = give_up_locked(awaited_before);
      none_came = received_ == received_before && counts_.dropped == dropped_before;
      arrived_.notify_all();
    }
    --waiting_;
  }
  const entry_view got = erase_locked(correlation);  // counts it settled when it was not
  if (!got.arrived && !got.lost) ++counts_.missing;
  if (given_up != 0) {
    lock.unlock();
    warn_lost(given_up, "did not arrive in time (cuda_bridge_options::record_timeout)");
    // Not one record in a whole timeout, none dropped: another client takes them (or a kernel
    // outran the timeout, holding its buffer; its records then bring them back).
    if (none_came) holder_.taken(taken_because::stopped_coming, epochs_.newest(), given_up);
    return std::nullopt;
  }
  if (got.lost) return std::nullopt;  // counted and said when it was given up
  if (!got.arrived || got.start == 0 || got.end == 0 || got.end < got.start) {
    if (got.arrived) ++counts_.missing;
    lock.unlock();
    warn_missing(correlation, got.arrived ? "carried no timestamps (the kernel was still running "
                                            "when CUPTI was forced to hand its record over)"
                                          : "did not arrive before the bridge closed");
    return std::nullopt;
  }
  delivered_.fetch_add(1, std::memory_order_relaxed);
  return steady_window(got.start, got.end);
}

void kernel_records::say_missing(const std::string& what) {
  const record_counts now = counts();
  const auto level = first_time(once_warning::cupti_record_missing) ? spdlog::level::warn
                                                                    : spdlog::level::debug;
  diagnostics().log(
      level,
      "{}. So far {} measurement(s) missing, {} record(s) dropped by CUPTI. Another CUPTI client "
      "registering activity buffers takes the records; a kernel running past "
      "cuda_bridge_options::record_timeout holds every record in its buffer.",
      what, now.missing, now.dropped);
}

void kernel_records::warn_missing(std::uint64_t correlation, const char* why) {
  say_missing(fmt::format("Skipped timing a CUDA launch (correlation {}) for its observer: its "
                          "kernel record {}; a zero would report a launch that was never timed",
                          correlation, why));
}

void kernel_records::warn_lost(std::size_t lost, const char* why) {
  say_missing(fmt::format("Gave up timing {} CUDA launch(es) for their observers: their kernel "
                          "records {}, so they resolve empty (a zero would report launches that "
                          "were never timed)",
                          lost, why));
}

void kernel_records::on_records(std::span<const kernel_record> kernels, std::size_t dropped) {
  // Applied in short locked steps: readers waiting for a record and the table's scans take the
  // same lock, and must not stall behind a whole buffer (its reader parsed it without the lock).
  // Launching threads take none of it.
  constexpr std::size_t step = 256;
  std::vector<kernel_record> unawaited;
  bool any = false;
  std::uint64_t newest = 0;
  for (std::size_t first = 0; first < kernels.size() || first == 0; first += step) {
    std::lock_guard lock{mutex_};
    if (first == 0) {
      counts_.dropped += dropped;
      received_ += kernels.size();
    }
    const std::size_t last = std::min(kernels.size(), first + step);
    std::uint64_t settled = 0;
    for (std::size_t i = first; i < last; ++i) {
      kernel_record k = kernels[i];
      k.correlation = epochs_.widen(static_cast<std::uint32_t>(k.correlation));
      newest = std::max(newest, k.correlation);
      slot& s = slot_of(k.correlation);
      const std::uint64_t state = s.state.load(std::memory_order_acquire);
      bool applied = false;
      if (holds(state, k.correlation)) {
        // Not yet arrived or lost, its entry is freed only under this lock: it stays this one
        // while the timestamps go in, and adopt() may only add its own flag meanwhile.
        if ((state & (arrived_bit | lost_bit)) == 0) {
          s.start.store(k.start, std::memory_order_relaxed);
          s.end.store(k.end, std::memory_order_relaxed);
          s.state.fetch_or(arrived_bit, std::memory_order_release);
          applied = true;
        }
      } else if (!overflow_.empty()) {
        if (const auto found = overflow_.find(k.correlation);
            found != overflow_.end() && !found->second.arrived && !found->second.lost) {
          found->second.arrived = true;
          found->second.start = k.start;
          found->second.end = k.end;
          applied = true;
        }
      }
      if (applied) {
        ++settled;
        any = true;
      } else if (others_ && k.graph_node != 0) {
        unawaited.push_back(k);
      }
    }
    if (settled != 0) settled_.fetch_add(settled, std::memory_order_release);
    if (last >= kernels.size()) break;
  }
  if (any) arrived_.notify_all();
  holder_.arrived(newest);
  for (const kernel_record& r : unawaited) others_(r);
}

void kernel_records::collect() {
  // While another client holds the records, a flush a second: a record that reaches this table
  // brings them back (a kernel that outran the timeout held them), and the other client's buffers
  // are its own business.
  constexpr auto elsewhere_period = std::chrono::seconds{1};
  std::optional<std::chrono::steady_clock::time_point> elsewhere_flushed;
  std::unique_lock lock{mutex_};
  while (!stopping_) {
    (void)wake_collector_.wait_for(lock, flush_period_, [&] { return urgent_ || stopping_; });
    if (stopping_) break;
    // While any awaited record is missing, not only while a resolve waits: measured on the H200
    // (20 000 empty launches, docs/benchmarks.md), a deferred launch cost +1.35 µs host with these
    // flushes and +2.1-2.2 µs without them, when CUPTI's buffers fill before they are handed over.
    bool wanted = urgent_ || waiting_ > 0 || outstanding() > 0;
    if (!holder_.held_elsewhere()) {
      elsewhere_flushed.reset();
    } else if (const auto now = std::chrono::steady_clock::now(); !elsewhere_flushed) {
      elsewhere_flushed = now;
    } else if (now - *elsewhere_flushed >= elsewhere_period) {
      elsewhere_flushed = now;
      wanted = true;
    }
    urgent_ = false;
    lock.unlock();
    if (!wanted && others_pending_) wanted = others_pending_();
    if (!wanted) {
      lock.lock();
      continue;
    }
    // Never FORCED here: a forced flush hands back a running kernel's record with zero timestamps,
    // and CUPTI never delivers it again.
    flush_(false);
    lock.lock();
  }
}

void kernel_records::flush_completed() { flush_(false); }

std::uint64_t kernel_records::mark() const noexcept {
  return epochs_.newest() + 1;
}

void kernel_records::flush_until_delivered(std::chrono::milliseconds patience,
                                           std::uint64_t idle_from, devices state) {
  // How long flushes of idle devices must bring nothing before what is missing counts as lost.
  // Not one or two flushes: CUPTI can hand a finished kernel's record over some time after the
  // device is idle (with "two empty flushes 1 ms apart" as the rule, the H200 delivered no graph
  // replay's records before flush() returned), so a flush that brings nothing says little alone.
  constexpr auto settle = std::chrono::milliseconds{250};
  const auto began = std::chrono::steady_clock::now();
  const auto deadline = began + patience;
  auto last_progress = began;
  std::uint64_t dropped_before = 0;
  {
    std::lock_guard lock{mutex_};
    dropped_before = counts_.dropped;
  }
  for (;;) {
    std::uint64_t received_before = 0;
    {
      std::lock_guard lock{mutex_};
      received_before = received_;
    }
    flush_completed();
    bool delivered = false;
    bool brought_nothing = false;
    {
      std::lock_guard lock{mutex_};
      delivered = outstanding() == 0;
      brought_nothing = received_ == received_before;
    }
    const bool others_delivered = !others_pending_ || !others_pending_();
    if (delivered && others_delivered) return;
    const auto now = std::chrono::steady_clock::now();
    if (!brought_nothing) last_progress = now;
    if (state == devices::maybe_busy) {
      // Nothing proves a missing record lost while a kernel may still run: it stays awaited.
      if (now >= deadline) return;
      std::this_thread::sleep_for(std::chrono::milliseconds{2});
      continue;
    }
    // The devices are idle, so flushes that bring nothing for `settle` mean the missing records
    // are not coming: one wait for all of them, never one timeout each.
    if (now - last_progress >= settle || now >= deadline) {
      std::size_t lost = 0;
      bool none_dropped = false;
      {
        std::lock_guard lock{mutex_};
        lost = give_up_locked(idle_from);
        none_dropped = counts_.dropped == dropped_before;
      }
      if (lost != 0) {
        arrived_.notify_all();
        warn_lost(lost, "were not handed over by a flush after the devices were idle");
        // Finished kernels whose records neither came nor were counted dropped: another client
        // holds them.
        if (none_dropped) holder_.taken(taken_because::stopped_coming, epochs_.newest(), lost);
      }
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
  }
}

void kernel_records::close() {
  {
    std::lock_guard lock{mutex_};
    if (closed_) return;
    stopping_ = true;
  }
  wake_collector_.notify_all();
  if (collector_.joinable()) collector_.join();
  // The devices are idle: whatever is still in a buffer is complete, and only a forced flush
  // returns a buffer that is not full.
  flush_(true);
  {
    std::lock_guard lock{mutex_};
    closed_ = true;
  }
  arrived_.notify_all();
}

record_counts kernel_records::counts() const noexcept {
  std::lock_guard lock{mutex_};
  record_counts counts = counts_;
  counts.delivered = delivered_.load(std::memory_order_relaxed);
  return counts;
}

}  // namespace launchwatch::detail::cuda_bridge
