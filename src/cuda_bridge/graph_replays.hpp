// Graph replays' device time per kernel node (cuda_graph_replays::per_node): which capture-time
// launch recorded each node, which replay a record belongs to, and telling a graph_replay_observer.
//
// CUPTI facts (research/cuda-bridge.md §2): during a stream capture the launch callbacks fire and
// GRAPHNODE_CREATED fires inside the launch's ENTER..EXIT, so the node is known to belong to the
// launch being reported; cudaGraphInstantiate clones every node (GRAPHNODE_CLONED, clone ←
// original); a replay fires only cuGraphLaunch, and its kernel records carry the launch's
// correlation id and the clone's graphNodeId.
//
// Over hours (review 2026-12-01b, finding 9): a program that captures and instantiates again and
// again (a capture per step, shapes that change) must not grow these tables, so a graph's nodes
// are forgotten when CUPTI says the graph is destroyed (GRAPH_DESTROY_STARTING) and an executable
// graph's clones when it is (GRAPHEXEC_DESTROY_STARTING) and its replays in flight are done. An
// executable graph is keyed by CUPTI's id of it, which is never reused (its address is: CUDA hands a
// destroyed one's out again). A
// replay whose records never all come (a record dropped, a launch that failed) is given up after
// the record timeout, so it does not keep the collector flushing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/launch_path.hpp>

#include "kernel_records.hpp"

namespace launchwatch::detail::cuda_bridge {

/// The capture-time launch a graph node was recorded by.
struct captured_node {
  std::string_view kernel;
  std::uint64_t launch_id = 0;
};

/// How much graph_replays keeps (for tests that it stays flat).
struct graph_table_sizes {
  /// Nodes known: captured ones and their clones.
  std::size_t nodes = 0;
  /// Graphs with known nodes.
  std::size_t graphs = 0;
  /// Executable graphs with known clones.
  std::size_t execs = 0;
  /// Replays waiting for records.
  std::size_t replays = 0;
  /// Replays whose known nodes all came, kept for records of nodes not known to be theirs (at
  /// most graph_replays::settled_kept).
  std::size_t settled = 0;
};

/// Thread safety: every member is safe from any thread.
class graph_replays {
 public:
  /// A replay still waiting for records `max_age` after it was launched is given up.
  explicit graph_replays(std::chrono::nanoseconds max_age) noexcept : max_age_{max_age} {}

  /// A node `node_id` of the graph `graph` (CUPTI's ids) was created while the launch `launch` was
  /// being captured.
  void node_created(std::uint64_t node_id, std::uint64_t graph, const captured_node& launch);
  /// The node `copy` of the graph `copy_graph` was made, inside a call adding a child-graph node,
  /// as the copy of the `ordinal`-th kernel node (creation order) of the graph `embedded`: it maps
  /// to what that node maps to (nothing when unknown).
  void node_copied(std::uint64_t copy, std::uint64_t copy_graph, std::uint64_t embedded,
                   std::uint32_t ordinal);
  /// `clone_id` (in the executable graph `exec`, 0 when unknown) was cloned from
  /// `original_id`.
  void node_cloned(std::uint64_t original_id, std::uint64_t clone_id, std::uint64_t exec);
  /// The graph `graph` is being destroyed: its nodes are forgotten, but for those a live executable
  /// graph was cloned from, which go with the last such exec.
  void graph_destroyed(std::uint64_t graph);
  /// The executable graph `exec` is being destroyed: its clones are forgotten once its replays in
  /// flight got their records (or were given up).
  void exec_destroyed(std::uint64_t exec);
  /// A replay of `exec` was launched with (the widened) `correlation`, while the observation
  /// `observation` was installed. Every kernel record of it is told: a node that a reported launch
  /// recorded under that launch, any other (a node the bridge never saw made: a copy CUPTI did not
  /// announce) under the record's own kernel name and no launch. Returns whether any of its nodes
  /// is known (else its size is not: it is kept a moment for its records).
  bool replay_launched(std::uint64_t correlation, std::uint64_t exec,
                       launch_path::observation_ref observation,
                       int device, std::uint64_t stream);
  /// A kernel record that nobody awaited: told to the observer if it belongs to a replay.
  void on_record(const kernel_record& record);
  /// Whether any replay still has nodes whose records have not arrived, or whose record is being
  /// told to its observer on another thread (replays older than the maximum age are given up
  /// first).
  bool pending();
  /// Replays still waiting for records are given up (teardown).
  void forget_pending();

  /// Replayed nodes told to an observer so far.
  std::uint64_t delivered() const;
  /// Of those, the ones whose node the bridge never saw made (told under their record's name).
  std::uint64_t delivered_unmapped() const;
  /// What the tables hold now.
  graph_table_sizes sizes() const;

  /// Settled replays kept for late records (a child graph's nodes CUPTI did not announce come
  /// after the known ones): the last this many.
  static constexpr std::size_t settled_kept = 1024;

 private:
  using clock = std::chrono::steady_clock;
  struct replay {
    launch_path::observation_ref observation;
    std::uint64_t number = 0;
    int device = 0;
    std::uint64_t stream = 0;
    std::uint64_t exec = 0;
    clock::time_point launched{};
    /// Known nodes whose records have not arrived.
    std::uint64_t remaining = 0;
    /// Whether its size is known: false when CUPTI did not say which executable graph a clone
    /// belongs to, so the replay is kept until it is pushed out.
    bool known = false;
  };
  struct exec_nodes {
    std::vector<std::uint64_t> clones;
    /// The captured nodes its clones were made from: kept while the exec lives, even once their
    /// graph is destroyed (a program may destroy the graph right after instantiating it, and a
    /// replay's records may name the node it was cloned from).
    std::vector<std::uint64_t> originals;
    /// Replays of it waiting for records: a destroyed exec's clones stay until they are done.
    std::size_t replays_pending = 0;
    bool destroyed = false;
  };
  /// Replays of unknown size, oldest first: at most `unknown_kept` of them are kept.
  static constexpr std::size_t unknown_kept = 4096;
  /// The replay `settled` got every record of its known nodes: it leaves the replays
  /// waiting, and is kept among the last settled_kept settled ones.
  void settle_locked(std::unordered_map<std::uint64_t, replay>::iterator settled);

  /// A replay is done (all its records came, or it was given up): its exec may go.
  void replay_done_locked(const replay& done);
  void forget_exec_locked(std::unordered_map<std::uint64_t, exec_nodes>::iterator exec);
  /// Gives up known replays launched before `before`.
  void give_up_locked(clock::time_point before);

  const std::chrono::nanoseconds max_age_;
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, captured_node> nodes_;
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> nodes_of_graph_;
  /// Captured nodes that live executable graphs were cloned from: how many such execs each has,
  /// and whether its graph is destroyed already (then the last exec to go forgets it).
  struct original_use {
    std::size_t execs = 0;
    bool graph_destroyed = false;
  };
  std::unordered_map<std::uint64_t, original_use> originals_in_use_;
  std::unordered_map<std::uint64_t, exec_nodes> execs_;
  std::unordered_map<std::uint64_t, replay> replays_;
  /// Known replays, oldest first, for ageing out (an entry may be done already).
  std::deque<std::uint64_t> known_order_;
  std::deque<std::uint64_t> unknown_;
  std::unordered_map<std::uint64_t, replay> settled_;
  std::deque<std::uint64_t> settled_order_;
  std::size_t known_pending_ = 0;
  clock::time_point last_unknown_{};
  std::uint64_t next_replay_ = 1;
  /// Replayed nodes being told to their observer now, outside mutex_ (on_record): counted under it
  /// with their replay's settling, so pending() covers them.
  std::atomic<std::uint64_t> telling_{0};
  std::atomic<std::uint64_t> delivered_{0};
  std::atomic<std::uint64_t> delivered_unmapped_{0};
};

}  // namespace launchwatch::detail::cuda_bridge
