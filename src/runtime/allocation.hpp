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
  void add_use(const std::shared_ptr<stream>& on, std::uint64_t point);
  /// The uses known now: what a read waits for.
  std::vector<use> uses() const;

  /// The allocation registered under `id`, or null when none is (it was destroyed, or never was).
  /// Cost: a shared lock and a hash lookup.
  static std::shared_ptr<allocation> find(std::uint64_t id);

  const std::shared_ptr<device> owner;
  void* const memory;
  const std::size_t bytes;
  const std::uint64_t id;

 private:
  mutable std::mutex mutex_;
  std::vector<use> uses_;
};

}  // namespace launchwatch::detail
