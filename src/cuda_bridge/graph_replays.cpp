// Graph replays' nodes, told to a graph_replay_observer (graph_replays.hpp); CUPTI-free.
#include "graph_replays.hpp"

#include <chrono>
#include <optional>

#include <launchwatch/launch_path.hpp>

namespace launchwatch::detail::cuda_bridge {

void graph_replays::node_created(std::uint64_t node_id, const captured_node& launch) {
  std::lock_guard lock{mutex_};
  nodes_[node_id] = launch;
}

void graph_replays::node_cloned(std::uint64_t original_id, std::uint64_t clone_id,
                                const void* exec) {
  std::lock_guard lock{mutex_};
  const auto found = nodes_.find(original_id);
  if (found == nodes_.end()) return;  // not a kernel a reported launch recorded
  const captured_node launch = found->second;
  nodes_[clone_id] = launch;
  if (exec != nullptr) ++known_nodes_of_exec_[exec];
}

bool graph_replays::replay_launched(std::uint32_t correlation, const void* exec,
                                    launch_path::observation_ref observation, int device, std::uint64_t stream) {
  std::lock_guard lock{mutex_};
  if (nodes_.empty()) return false;  // no observed capture recorded a node
  const auto known = known_nodes_of_exec_.find(exec);
  const std::uint64_t count = known != known_nodes_of_exec_.end() ? known->second : 0;
  replays_[correlation] = replay{observation, next_replay_++, device, stream, count};
  if (count != 0) {
    ++known_pending_;
  } else {
    unknown_.push_back(correlation);
    last_unknown_ = std::chrono::steady_clock::now();
    if (unknown_.size() > unknown_kept) {
      replays_.erase(unknown_.front());
      unknown_.pop_front();
    }
  }
  return true;
}

void graph_replays::on_record(const kernel_record& record) {
  launch_path::observation_ref observation;
  std::optional<replayed_node> node;
  {
    std::lock_guard lock{mutex_};
    const auto r = replays_.find(record.correlation);
    if (r == replays_.end()) return;
    const auto n = nodes_.find(record.graph_node);
    if (n == nodes_.end()) return;
    observation = r->second.observation;
    if (record.start != 0 && record.end >= record.start) {
      node = replayed_node{n->second.kernel,
                           n->second.launch_id,
                           r->second.number,
                           r->second.device,
                           r->second.stream,
                           steady_window(record.start, record.end)};
    }
    if (r->second.remaining != 0 && --r->second.remaining == 0) {
      replays_.erase(r);
      --known_pending_;
    }
  }
  if (node && launch_path::deliver_replayed(observation, *node)) {
    delivered_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool graph_replays::pending() const {
  std::lock_guard lock{mutex_};
  // A replay of unknown size counts as pending for a moment after it was launched, long enough for
  // its kernels to finish and a flush to bring their records.
  return known_pending_ > 0 ||
         (!unknown_.empty() &&
          std::chrono::steady_clock::now() - last_unknown_ < std::chrono::milliseconds{200});
}

void graph_replays::forget_pending() {
  std::lock_guard lock{mutex_};
  replays_.clear();
  unknown_.clear();
  known_pending_ = 0;
}

std::uint64_t graph_replays::delivered() const {
  return delivered_.load(std::memory_order_relaxed);
}

}  // namespace launchwatch::detail::cuda_bridge
