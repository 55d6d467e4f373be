// Graph replays' nodes, told to a graph_replay_observer (graph_replays.hpp); CUPTI-free.
#include "graph_replays.hpp"

#include <optional>

#include <launchwatch/launch_path.hpp>

#include "core/interface/kernel_symbols.hpp"

namespace launchwatch::detail::cuda_bridge {

void graph_replays::node_created(std::uint64_t node_id, std::uint64_t graph,
                                 const captured_node& launch) {
  std::lock_guard lock{mutex_};
  if (nodes_.insert_or_assign(node_id, launch).second) nodes_of_graph_[graph].push_back(node_id);
}

void graph_replays::node_copied(std::uint64_t copy, std::uint64_t copy_graph,
                                std::uint64_t embedded, std::uint32_t ordinal) {
  std::lock_guard lock{mutex_};
  const auto graph = nodes_of_graph_.find(embedded);
  if (graph == nodes_of_graph_.end() || ordinal >= graph->second.size()) return;
  const auto original = nodes_.find(graph->second[ordinal]);
  if (original == nodes_.end()) return;
  const captured_node launch = original->second;
  if (nodes_.insert_or_assign(copy, launch).second) nodes_of_graph_[copy_graph].push_back(copy);
}

void graph_replays::node_cloned(std::uint64_t original_id, std::uint64_t clone_id,
                                std::uint64_t exec) {
  std::lock_guard lock{mutex_};
  const auto found = nodes_.find(original_id);
  if (found == nodes_.end()) return;  // not a kernel a reported launch recorded
  const captured_node launch = found->second;
  const bool added = nodes_.insert_or_assign(clone_id, launch).second;
  if (!added) return;
  // A clone CUPTI names no executable graph for is filed under the graph id in its own id's upper
  // half (CUPTI's numbering of node ids), and forgotten if that graph is destroyed.
  if (exec != 0) {
    exec_nodes& made = execs_[exec];
    made.clones.push_back(clone_id);
    made.originals.push_back(original_id);
    ++originals_in_use_[original_id].execs;
  } else {
    nodes_of_graph_[clone_id >> 32].push_back(clone_id);
  }
}

void graph_replays::graph_destroyed(std::uint64_t graph) {
  std::lock_guard lock{mutex_};
  const auto found = nodes_of_graph_.find(graph);
  if (found == nodes_of_graph_.end()) return;
  for (const std::uint64_t node : found->second) {
    const auto used = originals_in_use_.find(node);
    if (used != originals_in_use_.end()) {
      used->second.graph_destroyed = true;  // the last exec cloned from it forgets it
    } else {
      nodes_.erase(node);
    }
  }
  nodes_of_graph_.erase(found);
}

void graph_replays::exec_destroyed(std::uint64_t exec) {
  std::lock_guard lock{mutex_};
  const auto found = execs_.find(exec);
  if (found == execs_.end()) return;
  found->second.destroyed = true;
  if (found->second.replays_pending == 0) forget_exec_locked(found);
}

void graph_replays::forget_exec_locked(
    std::unordered_map<std::uint64_t, exec_nodes>::iterator exec) {
  for (const std::uint64_t clone : exec->second.clones) nodes_.erase(clone);
  for (const std::uint64_t original : exec->second.originals) {
    const auto used = originals_in_use_.find(original);
    if (used == originals_in_use_.end() || --used->second.execs != 0) continue;
    if (used->second.graph_destroyed) nodes_.erase(original);
    originals_in_use_.erase(used);
  }
  execs_.erase(exec);
}

void graph_replays::replay_done_locked(const replay& done) {
  if (!done.known) return;  // of unknown size: nothing counts it
  --known_pending_;
  const auto exec = execs_.find(done.exec);
  if (exec == execs_.end()) return;
  --exec->second.replays_pending;
  if (exec->second.destroyed && exec->second.replays_pending == 0) forget_exec_locked(exec);
}

void graph_replays::give_up_locked(clock::time_point before) {
  while (!known_order_.empty()) {
    const auto r = replays_.find(known_order_.front());
    if (r != replays_.end() && r->second.known) {
      if (r->second.launched >= before) return;
      const replay given_up = r->second;
      replays_.erase(r);
      replay_done_locked(given_up);
    }
    known_order_.pop_front();
  }
}

bool graph_replays::replay_launched(std::uint64_t correlation, std::uint64_t exec,
                                    launch_path::observation_ref observation, int device,
                                    std::uint64_t stream) {
  std::lock_guard lock{mutex_};
  const auto now = clock::now();
  give_up_locked(now - max_age_);
  const auto known = exec != 0 ? execs_.find(exec) : execs_.end();
  const std::uint64_t count = known != execs_.end() ? known->second.clones.size() : 0;
  replays_[correlation] =
      replay{observation, next_replay_++, device, stream, exec, now, count, count != 0};
  if (count != 0) {
    ++known_pending_;
    ++known->second.replays_pending;
    known_order_.push_back(correlation);
  } else {
    unknown_.push_back(correlation);
    last_unknown_ = now;
    if (unknown_.size() > unknown_kept) {
      replays_.erase(unknown_.front());
      unknown_.pop_front();
    }
  }
  return count != 0;
}

void graph_replays::settle_locked(std::unordered_map<std::uint64_t, replay>::iterator settled) {
  const std::uint64_t correlation = settled->first;
  const replay done = settled->second;
  replays_.erase(settled);
  replay_done_locked(done);
  settled_.insert_or_assign(correlation, done);
  settled_order_.push_back(correlation);
  if (settled_order_.size() > settled_kept) {
    settled_.erase(settled_order_.front());
    settled_order_.pop_front();
  }
}

void graph_replays::on_record(const kernel_record& record) {
  launch_path::observation_ref observation;
  std::optional<replayed_node> node;
  bool mapped = true;
  {
    std::lock_guard lock{mutex_};
    auto r = replays_.find(record.correlation);
    const bool waiting = r != replays_.end();
    if (!waiting) {
      r = settled_.find(record.correlation);
      if (r == settled_.end()) return;
    }
    const auto n = nodes_.find(record.graph_node);
    mapped = n != nodes_.end();
    // A node no reported launch made (a child graph's copy CUPTI did not announce, a node of a
    // graph built before the bridge) still ran in this replay: it is counted, under its record's
    // name and no captured launch, so the replay's kernels are all there.
    const captured_node launch =
        mapped ? n->second
               : captured_node{symbol_table::process()
                                   .intern(record.name != nullptr ? record.name : "[unnamed kernel]")
                                   .name,
                               0};
    observation = r->second.observation;
    if (record.start != 0 && record.end >= record.start) {
      node = replayed_node{launch.kernel,
                           launch.launch_id,
                           r->second.number,
                           r->second.device,
                           r->second.stream,
                           steady_window(record.start, record.end)};
    }
    if (waiting && mapped && r->second.known && --r->second.remaining == 0) settle_locked(r);
    // Counted before the lock is let go: a replay settled here is pending() until it was told.
    if (node) telling_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!node) return;
  if (launch_path::deliver_replayed(observation, *node)) {
    delivered_.fetch_add(1, std::memory_order_relaxed);
    if (!mapped) delivered_unmapped_.fetch_add(1, std::memory_order_relaxed);
  }
  telling_.fetch_sub(1, std::memory_order_release);
}

bool graph_replays::pending() {
  // A node being told on the thread that handled its record (the collector's flush, say) is not
  // told yet: whoever waits for the replays to be delivered waits for it too.
  if (telling_.load(std::memory_order_acquire) != 0) return true;
  std::lock_guard lock{mutex_};
  const auto now = clock::now();
  give_up_locked(now - max_age_);
  // A replay of unknown size counts as pending for a moment after it was launched, long enough for
  // its kernels to finish and a flush to bring their records.
  return known_pending_ > 0 ||
         (!unknown_.empty() && now - last_unknown_ < std::chrono::milliseconds{200});
}

void graph_replays::forget_pending() {
  std::lock_guard lock{mutex_};
  give_up_locked(clock::time_point::max());
  for (const std::uint64_t correlation : unknown_) replays_.erase(correlation);
  unknown_.clear();
  settled_.clear();
  settled_order_.clear();
}

std::uint64_t graph_replays::delivered() const {
  return delivered_.load(std::memory_order_relaxed);
}

std::uint64_t graph_replays::delivered_unmapped() const {
  return delivered_unmapped_.load(std::memory_order_relaxed);
}

graph_table_sizes graph_replays::sizes() const {
  std::lock_guard lock{mutex_};
  return graph_table_sizes{nodes_.size(), nodes_of_graph_.size(), execs_.size(), replays_.size(),
                           settled_.size()};
}

}  // namespace launchwatch::detail::cuda_bridge
