// The runtime's record of one device allocation, and the process-wide registry that maps a span's
// owner tag back to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/backend.hpp"

namespace launchwatch::detail {

/// One device allocation behind a buffer (and its copies, and every graph that references it).
///
/// Knows the launches that referenced it, as one ordering point per stream, so a read waits for
/// those and nothing else, and the memory is freed only once they have run. Registered under its id
/// while it lives, so a launch can find it from a span and reject a span of a destroyed buffer.
///
/// Where the points live: each stream keeps, for every allocation its launches referenced, the
/// point of the last one (stream::uses); the allocation keeps only the list of streams that did.
/// So a launch writes to its own stream's record, and touches the allocation (its lock) only the
/// first time a stream uses it: threads launching with one shared weight buffer never contend on
/// it.
///
/// Thread safety: every member may be called from several threads at once.
struct allocation : std::enable_shared_from_this<allocation> {
  /// A stream that referenced this allocation, and the point after its last launch that did.
  struct use {
    std::shared_ptr<stream> on;
    std::uint64_t point = 0;
  };

  /// Takes ownership of `memory` (`bytes` long, from `owner.allocate`) and registers it.
  allocation(std::shared_ptr<device> owner, void* memory, std::size_t bytes);
  /// Unregisters, then hands the memory back to the device, to be freed after every use.
  ~allocation();
  allocation(const allocation&) = delete;
  allocation& operator=(const allocation&) = delete;

  /// Notes that `on` referenced this allocation in the launch that returned `point`.
  /// Cost: `on`'s own lock and a hash lookup; the first time `on` uses this allocation, also the
  /// allocation's lock.
  void add_use(const std::shared_ptr<stream>& on, std::uint64_t point);
  /// The uses known now: what a read waits for.
  std::vector<use> uses() const;

  /// The allocation registered under `id`, or null when none is (it was destroyed, or never was).
  ///
  /// The pointer stays valid while the buffer it belongs to lives: a launch may use it for as long
  /// as it runs, since a buffer must outlive the issuing of the launches that use it (destroying it
  /// on another thread meanwhile is a race in the program). Take shared_from_this() to keep it.
  /// Cost: a read lock whose readers share no cache line, and a hash lookup; no reference count.
  static allocation* find(std::uint64_t id);

  const std::shared_ptr<device> owner;
  void* const memory;
  const std::size_t bytes;
  const std::uint64_t id;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<stream>> streams_;  // every stream with a point in its `uses`
};

}  // namespace launchwatch::detail
