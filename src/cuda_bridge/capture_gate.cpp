// Stream captures in progress and the bridge's synchronisations outside them (capture_gate.hpp).
#include "capture_gate.hpp"

#include "core/interface/diagnostics.hpp"

namespace launchwatch::detail::cuda_bridge {

void capture_gate::beginning(std::uint64_t stream) {
  std::unique_lock lock{mutex_};
  ++captures_[stream];
  count_.fetch_add(1, std::memory_order_release);
  if (synchronising_ == 0) return;
  if (synchronised_.wait_for(lock, longest_wait_, [&] { return synchronising_ == 0; })) return;
  lock.unlock();
  if (first_time(once_warning::capture_waited_past_synchronisation)) {
    diagnostics().warn(
        "A CUDA stream capture waited {} ms for the CUDA bridge to finish waiting for the devices "
        "(cuda_bridge::flush or its end), and began before it did; if CUDA reports the capture "
        "invalidated, call the bridge's flush outside stream captures.",
        longest_wait_.count());
  }
}

void capture_gate::ended(std::uint64_t stream) noexcept {
  std::lock_guard lock{mutex_};
  const auto found = captures_.find(stream);
  if (found == captures_.end()) return;
  if (--found->second == 0) captures_.erase(found);
  count_.fetch_sub(1, std::memory_order_release);
}

bool capture_gate::synchronise_outside_captures(const std::function<void()>& synchronise) {
  if (!synchronise) return in_progress() == 0;
  {
    std::lock_guard lock{mutex_};
    if (count_.load(std::memory_order_relaxed) != 0) return false;
    ++synchronising_;
  }
  const auto open = [this] {
    {
      std::lock_guard lock{mutex_};
      --synchronising_;
    }
    synchronised_.notify_all();
  };
  try {
    synchronise();
  } catch (...) {
    open();
    throw;
  }
  open();
  return true;
}

}  // namespace launchwatch::detail::cuda_bridge
