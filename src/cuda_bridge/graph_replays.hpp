// Graph replays' device time per kernel node (cuda_graph_replays::per_node): which capture-time
// launch recorded each node, which replay a record belongs to, and telling a graph_replay_observer.
//
// CUPTI facts (research/cuda-bridge.md §2): during a stream capture the launch callbacks fire and
// GRAPHNODE_CREATED fires inside the launch's ENTER..EXIT, so the node is known to belong to the
// launch being reported; cudaGraphInstantiate clones every node (GRAPHNODE_CLONED, clone ←
// original); a replay fires only cuGraphLaunch, and its kernel records carry the launch's
// correlation id and the clone's graphNodeId.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/launch_path.hpp>

#include "kernel_records.hpp"

namespace launchwatch::detail::cuda_bridge {

/// The capture-time launch a graph node was recorded by.
struct captured_node {
  std::string_view kernel;
  std::uint64_t launch_id = 0;
};

/// Thread safety: every member is safe from any thread.
class graph_replays {
 public:
  /// A node `node_id` was created while the launch `launch` was being captured.
  void node_created(std::uint64_t node_id, const captured_node& launch);
  /// `clone_id` (in the executable graph `exec`) was cloned from `original_id`.
  void node_cloned(std::uint64_t original_id, std::uint64_t clone_id, const void* exec);
  /// A replay of `exec` was launched with `correlation`, while the observation `observation` was
  /// installed. Returns whether any of its nodes is known (else nothing will be told).
  bool replay_launched(std::uint32_t correlation, const void* exec, launch_path::observation_ref observation,
                       int device, std::uint64_t stream);
  /// A kernel record that nobody awaited: told to the observer if it is a known replay's node.
  void on_record(const kernel_record& record);
  /// Whether any replay still has nodes whose records have not arrived.
  bool pending() const;
  /// Replays still waiting for records are given up (flush, teardown).
  void forget_pending();

  /// Replayed nodes told to an observer so far.
  std::uint64_t delivered() const;

 private:
  struct replay {
    launch_path::observation_ref observation;
    std::uint64_t number = 0;
    int device = 0;
    std::uint64_t stream = 0;
    /// Known nodes whose records have not arrived; 0 when CUPTI did not say which executable graph
    /// a clone belongs to, so the count is unknown and the replay is kept until it is pushed out.
    std::uint64_t remaining = 0;
  };
  /// Replays of unknown size, oldest first: at most `unknown_kept` of them are kept.
  static constexpr std::size_t unknown_kept = 4096;

  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, captured_node> nodes_;
  std::unordered_map<const void*, std::uint64_t> known_nodes_of_exec_;
  std::unordered_map<std::uint32_t, replay> replays_;
  std::deque<std::uint32_t> unknown_;
  std::size_t known_pending_ = 0;
  std::chrono::steady_clock::time_point last_unknown_{};
  std::uint64_t next_replay_ = 1;
  std::atomic<std::uint64_t> delivered_{0};
};

}  // namespace launchwatch::detail::cuda_bridge
