// A stream's capture window: whether one is open, and the launches it recorded. Shared by the
// backends whose graphs are the recorded launches themselves (cpu, vulkan), so they open, refuse
// and close a window alike.
#pragma once

#include <atomic>
#include <utility>
#include <vector>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail {

/// What begin_capture throws (as capture_error) on a stream already recording a capture, in every
/// backend: captures do not nest.
inline constexpr const char* nested_capture_refusal =
    "begin_capture refused: this stream is already recording a capture; end it first (captures do "
    "not nest)";

/// The launches recorded between begin() and end(), as a backend keeps them (`Launch`).
///
/// Thread safety: begin, end and add are called under the owning stream's lock; open() from any
/// thread.
template <class Launch>
class capture_window {
 public:
  /// Opens the window. Throws capture_error if one is open: captures do not nest.
  void begin() {
    if (open_.load(std::memory_order_relaxed)) {
      throw capture_error{nested_capture_refusal};
    }
    recorded_.clear();
    open_.store(true, std::memory_order_release);
  }

  /// Closes the window and hands over what it recorded. Throws capture_error if none is open.
  std::vector<Launch> end() {
    if (!open_.load(std::memory_order_relaxed)) {
      throw capture_error{
          "end_capture refused: this stream is not recording a capture; call begin_capture first "
          "(on the same thread, or through the same pinned client)"};
    }
    open_.store(false, std::memory_order_release);
    return std::exchange(recorded_, {});
  }

  /// Records `launch`. Precondition: open().
  void add(Launch launch) { recorded_.push_back(std::move(launch)); }

  /// Whether a window is open.
  bool open() const noexcept { return open_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> open_{false};
  std::vector<Launch> recorded_;
};

}  // namespace launchwatch::detail
