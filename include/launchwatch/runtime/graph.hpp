// Recorded launches, replayed as one unit.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

namespace launchwatch {

class client;

namespace detail {
/// What a capture recorded, defined by the runtime: the backend's graph, the stream it replays on,
/// and the buffers its launches reference (kept alive while the graph can replay).
struct graph_state;
}  // namespace detail

/// The launches one capture window recorded, ready to run again as a whole.
///
/// Made by `client::capture` or `client::end_capture`. A replay runs every recorded launch, in the
/// order they were issued, without issuing them again: their observers saw them once, when the
/// capture recorded them, so replays are not reported (docs/design.md §2, behaviour 12). On CUDA it is a
/// CUDA graph, which is why replaying is cheaper per kernel than launching.
///
/// Contract: a graph keeps the buffers its launches reference alive; a replay runs on the stream the
/// capture recorded on, after the work already queued there, and a read of a buffer it writes waits
/// for it. Copies share the recording. Thread safety: a graph may be replayed from several threads
/// at once; the replays queue on its stream in some order.
class graph {
 public:
  /// A graph that recorded nothing; replaying it does nothing.
  graph() noexcept = default;

  /// Runs every recorded launch again, in order, on the stream they were recorded on.
  ///
  /// Throws capture_error if that stream is recording a capture now. A kernel that fails during a
  /// replay surfaces at the next sync or read, like any launch. Under a dry run (dry_run()) a
  /// replay runs nothing and leaves every buffer as it was.
  /// Cost: one submission for the whole graph, no observer call.
  void replay() const;

  /// How many launches were recorded.
  std::size_t size() const noexcept;

  /// Whether no launch was recorded.
  bool empty() const noexcept { return size() == 0; }

 private:
  friend class client;
  explicit graph(std::shared_ptr<detail::graph_state> state) noexcept : state_{std::move(state)} {}

  std::shared_ptr<detail::graph_state> state_;
};

}  // namespace launchwatch
