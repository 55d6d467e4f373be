// An aggregate-only attribution's fold (aggregate_fold.hpp).

#include "aggregate_fold.hpp"

#include <exception>
#include <utility>

namespace launchwatch::detail {

std::optional<launch_timing> read_measurement(launch_entry& entry, lost_measurements& lost,
                                              std::string& first_failure) {
  switch (entry.state) {
    case measurement_state::none:
      return std::nullopt;
    case measurement_state::length:
      return launch_timing{entry.length, entry.method, std::nullopt};
    case measurement_state::pending:
      break;
  }
  try {
    auto ticks = std::move(*entry.pending).resolve();
    if (!ticks) {
      ++lost.empty;
      return std::nullopt;
    }
    return launch_timing{ticks->length(), entry.method, *ticks};
  } catch (const std::exception& error) {
    if (lost.failed++ == 0) first_failure = error.what();
  } catch (...) {
    if (lost.failed++ == 0) first_failure = "an exception not derived from std::exception";
  }
  return std::nullopt;
}

after_hand_over hand_over(thread_log& log) noexcept {
  log.handed.append(log.launches.release());
  // `unfolded` counts the launch being reported too, which stays.
  log.handed_launches += log.unfolded - 1;
  log.unfolded = 1;
  // Every launch handed over has had its measurement, or will have none: its thread is reporting a
  // newer launch now.
  log.awaiting = nullptr;
  if (log.handed_launches > fold_backlog) return after_hand_over::fold_here;
  if (std::exchange(log.fold_queued, true)) return after_hand_over::nothing;
  return after_hand_over::queue;
}

namespace {

/// The group `entry` is totalled in, made when it is the first of its (scope path, kernel, stream)
/// this pass. The caller holds `log.fold_mutex`. Cost: a compare of a few words when it is the
/// group of the launch folded before it, else a hash lookup, else (the first of its identity this
/// pass) a map lookup by name and two node allocations.
launch_group& group_of(thread_log& log, const launch_entry& entry) {
  const auto identity =
      aggregate_identity::of(entry.path, entry.kernel, entry.backend, entry.device, entry.stream);
  if (log.last_group && log.last_group->first == identity) return *log.last_group->second;
  auto found = log.aggregate_index.find(identity);
  if (found == log.aggregate_index.end()) {
    // Several identities can name one group: past a few per group, start the index again, so its
    // memory stays bounded by the groups' (as the aggregate's is) whatever the launch sources do.
    if (log.aggregate_index.size() >= 2 * log.aggregate.size() + 64) log.aggregate_index.clear();
    auto& group =
        log.aggregate[{entry.path, entry.kernel, entry.backend, entry.device, entry.stream}];
    found = log.aggregate_index.emplace(identity, &group).first;
  }
  log.last_group.emplace(identity, found->second);
  return *found->second;
}

}  // namespace

void fold_chunks(recorder& r, thread_log& log, chunk<launch_entry>* chunks) {
  struct give_back {
    recorder& r;
    chunk<launch_entry>* chunks;
    ~give_back() { r.pools->launches.give_back(chunks); }
  } on_exit{r, chunks};
  std::string first_failure;
  auto& placed = log.placed_scratch;
  placed.clear();
  for (auto* c = chunks; c != nullptr; c = c->next) {
    for (auto& entry : c->items) {
      launch_record launch;
      launch.issued = entry.issued;
      launch.returned = entry.returned;
      launch.timing = read_measurement(entry, log.aggregate_lost, first_failure);
      launch.dry_run = entry.dry_run;
      launch.captured = entry.capturing;
      group_of(log, entry).add(launch);
      if (entry.in_prefix) {
        // Its tables' indices are given when the prefix is collected (collect_bounded).
        launch.cube_count = entry.cube_count;
        launch.cube_dim = entry.cube_dim;
        launch.replayed = entry.replayed;
        log.prefix.emplace_unpooled(prefix_launch{entry.kernel, entry.backend, entry.stream,
                                                  entry.device, entry.path, launch});
      }
      if (launch.timing && launch.timing->ticks && !launch.dry_run) {
        placed.emplace_back(entry.backend, entry.device, entry.stream,
                            launch.timing->ticks->start(), launch.timing->ticks->end());
      }
    }
  }
  if (placed.empty()) return;
  std::lock_guard lock{r.timeline_mutex};
  for (const auto& [backend, device, stream, start, end] : placed) {
    r.placed.add(backend, device, stream, start, end);
  }
}

void fold_handed(recorder& r, thread_log& log) {
  std::lock_guard folding{log.fold_mutex};
  chunk<launch_entry>* chunks = nullptr;
  {
    std::lock_guard lock{log.mutex};
    chunks = log.take_handed();
  }
  fold_chunks(r, log, chunks);
}

void finish_hand_over(recorder& r, thread_log& log, after_hand_over next) {
  switch (next) {
    case after_hand_over::nothing:
      return;
    case after_hand_over::queue:
      if (r.folds.queue(log)) return;
      break;
    case after_hand_over::fold_here:
      break;
  }
  fold_handed(r, log);
}

}  // namespace launchwatch::detail
