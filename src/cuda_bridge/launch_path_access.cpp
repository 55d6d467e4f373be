// The one file of the bridge that reaches into the core's private headers and the CUDA backend's
// own_submit.hpp (launch_path_access.hpp says why, and what replaces them).
#include "cuda_bridge/launch_path_access.hpp"

#include <shared_mutex>

#include "backend/cuda/own_submit.hpp"
#include "launch_watch_writer.hpp"
#include "observation_slot.hpp"

namespace launchwatch::detail::cuda_bridge {

std::uint64_t current_observation() noexcept {
  auto& stack = observation_stack::get();
  std::shared_lock lock{stack.mutex};
  return stack.installed_serial;
}

bool deliver_replayed(std::uint64_t observation, const replayed_node& node) {
  auto& stack = observation_stack::get();
  std::shared_lock lock{stack.mutex};
  if (!stack.installed || stack.installed_serial != observation) return false;
  auto* wants = dynamic_cast<graph_replay_observer*>(stack.installed.get());
  if (wants == nullptr) return false;
  call_observer("replayed", node.kernel, [&] { wants->replayed(node); });
  return true;
}

bool inside_observer() noexcept { return callback_depth > 0; }

void forbid_inside_observer(const char* what) { check_not_in_callback(what); }

void on_watched_change(void (*listener)() noexcept) noexcept {
  launch_watch_writer::listen(listener);
}

bool reported_by_own_backend() noexcept { return cuda::submitting_own_launch; }

}  // namespace launchwatch::detail::cuda_bridge
