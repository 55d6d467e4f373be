#include "runtime/thread_streams.hpp"

#include <deque>
#include <utility>

#include "core/interface/fork_generation.hpp"

namespace launchwatch::detail {
namespace {

/// This thread's default stream on each device it has used, keyed by device id (never reused, so an
/// entry can never be mistaken for another device's). A deque so references stay valid as it grows.
struct thread_streams {
  std::uint64_t generation = fork_generation();
  std::deque<std::pair<std::uint64_t, std::shared_ptr<stream>>> entries;

  /// Forgets the streams a forked child inherited, without destroying them: their destructors
  /// would wait for workers that stayed with the parent.
  void forget_if_forked() {
    const std::uint64_t now = fork_generation();
    if (generation == now) [[likely]] return;
    generation = now;
    new std::deque<std::pair<std::uint64_t, std::shared_ptr<stream>>>{std::move(entries)};
    entries.clear();
  }

  const std::shared_ptr<stream>* find(std::uint64_t device_id) {
    forget_if_forked();
    for (const auto& [id, s] : entries) {
      if (id == device_id) return &s;
    }
    return nullptr;
  }
};

thread_local thread_streams this_thread_streams;

}  // namespace

const std::shared_ptr<stream>& stream_of_this_thread(device& on) {
  auto& streams = this_thread_streams;
  if (const auto* found = streams.find(on.id())) return *found;
  streams.entries.emplace_back(on.id(), on.create_stream());
  return streams.entries.back().second;
}

const std::shared_ptr<stream>* find_stream_of_this_thread(std::uint64_t device_id) {
  return this_thread_streams.find(device_id);
}

}  // namespace launchwatch::detail
