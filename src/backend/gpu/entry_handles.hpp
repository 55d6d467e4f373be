// Each kernel entry's handle for the API's lowest launch call, looked up once per entry: free of
// CUDA and HIP so that its table is tested on the CPU.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace launchwatch::detail::gpu {

/// A table from a kernel entry's host stub (what the runtime's launch call takes) to the handle
/// the driver's launch call takes, filled on an entry's first launch and read without a lock by
/// every launch after it.
///
/// Why: the runtime's launch call finds the entry's function from its host stub, and does more
/// bookkeeping besides, on every launch; on an H200's host it costs 0.2-0.4 µs more than the
/// driver's own call given a handle found once (docs/benchmarks.md, issue 24), more than all of
/// launchwatch's deferred timing. `Lookup` is called as `lookup(stub)` and returns the handle, or
/// null when the entry has none the driver can launch (the caller then launches it through the
/// runtime, which says why it cannot in its own terms). A null answer is kept too, so a failing
/// entry is asked about once.
///
/// Bounded: `Capacity` entries. An entry that finds the table three-quarters full is not kept, and
/// gets its handle from `Lookup` on each launch (correct, and slower), so that every search ends at
/// an empty slot within a few steps.
///
/// Thread safety: find() and handle() may be called from any thread; lookups of new entries take
/// a lock (so each entry is looked up once however many threads launch it first).
/// Cost: find() is a multiplicative hash and an acquire load per slot searched, usually one.
template <class Handle, std::size_t Capacity = 1024>
class entry_handles {
  static_assert(std::has_single_bit(Capacity) && Capacity >= 2,
                "the table's capacity must be a power of two, at least 2");

 public:
  /// What find() says of an entry.
  struct found {
    bool known = false;     // looked up before
    Handle handle = nullptr;  // null when unknown, or known to have no handle
  };

  constexpr entry_handles() = default;
  entry_handles(const entry_handles&) = delete;
  entry_handles& operator=(const entry_handles&) = delete;

  /// What the table holds for `stub`, without a lock or a lookup.
  found find(const void* stub) const noexcept {
    for (std::size_t i = home(stub), step = 0; step < Capacity; ++step, i = (i + 1) % Capacity) {
      const void* key = slots_[i].stub.load(std::memory_order_acquire);
      if (key == stub) return {true, slots_[i].handle};
      if (key == nullptr) return {};
    }
    return {};
  }

  /// The handle of `stub`: the table's, else `lookup(stub)`'s, kept while the table has room.
  /// Null when the entry has none.
  template <class Lookup>
  Handle handle(const void* stub, Lookup&& lookup) {
    if (const found known = find(stub); known.known) return known.handle;
    std::lock_guard lock{insert_};
    if (const found known = find(stub); known.known) return known.handle;
    const Handle handle = lookup(stub);
    if (kept_ * 4 >= Capacity * 3) return handle;
    std::size_t i = home(stub);
    while (slots_[i].stub.load(std::memory_order_relaxed) != nullptr) i = (i + 1) % Capacity;
    slots_[i].handle = handle;
    slots_[i].stub.store(stub, std::memory_order_release);  // publishes the handle with it
    ++kept_;
    return handle;
  }

  /// How many entries the table keeps.
  std::size_t size() const {
    std::lock_guard lock{insert_};
    return kept_;
  }

 private:
  struct slot {
    std::atomic<const void*> stub{nullptr};
    Handle handle = nullptr;  // written before stub is published, never after
  };

  static std::size_t home(const void* stub) noexcept {
    // Fibonacci hashing: entries' stubs are a few bytes apart in one program's text, and the
    // multiplication spreads their low bits over the index.
    const auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(stub));
    return static_cast<std::size_t>((bits * 0x9e3779b97f4a7c15ULL) >>
                                    (64 - std::countr_zero(Capacity)));
  }

  std::array<slot, Capacity> slots_{};
  mutable std::mutex insert_;
  std::size_t kept_ = 0;
};

}  // namespace launchwatch::detail::gpu
