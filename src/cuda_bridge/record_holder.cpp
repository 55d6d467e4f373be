// Who CUPTI's kernel records go to (record_holder.hpp).
#include "record_holder.hpp"

#include "core/interface/diagnostics.hpp"

namespace launchwatch::detail::cuda_bridge {

void record_holder::taken(taken_because why, std::uint64_t newest_launch, std::size_t lost) {
  {
    std::lock_guard lock{mutex_};
    if (elsewhere_.load(std::memory_order_relaxed)) return;
    taken_after_ = newest_launch;
    since_ = std::chrono::steady_clock::now();
    ++counts_.windows;
    elsewhere_.store(true, std::memory_order_relaxed);
  }
  const auto level = first_time(once_warning::cupti_records_taken) ? spdlog::level::warn
                                                                     : spdlog::level::debug;
  if (why == taken_because::told) {
    diagnostics().log(level,
                      "Another CUPTI client of the program takes CUPTI's kernel records now (the "
                      "program said so): launches are still counted and attributed to their "
                      "scopes, untimed, until it releases them; the report's times leave that "
                      "window out.");
    return;
  }
  diagnostics().log(
      level,
      "CUPTI's kernel records stopped reaching launchwatch ({} measurement(s) given up, none "
      "counted dropped by CUPTI): another CUPTI client in this process (a tool of its own, an "
      "injection) registered its own activity buffers, which takes every record. "
      "Launches are still counted and attributed to their scopes, untimed, until records reach "
      "launchwatch again; the report's times leave that window out.",
      lost);
}

void record_holder::returned() noexcept {
  std::lock_guard lock{mutex_};
  end_window_locked();
}

void record_holder::arrived_while_taken(std::uint64_t newest) noexcept {
  std::lock_guard lock{mutex_};
  if (newest > taken_after_) end_window_locked();
}

void record_holder::end_window_locked() noexcept {
  if (!elsewhere_.load(std::memory_order_relaxed)) return;
  const auto held = std::chrono::steady_clock::now() - since_;
  counts_.held_elsewhere += held;
  elsewhere_.store(false, std::memory_order_relaxed);
  try {
    diagnostics().debug("CUPTI's kernel records reach launchwatch again, after {} ms elsewhere",
                        std::chrono::duration_cast<std::chrono::milliseconds>(held).count());
  } catch (...) {
    // A log that failed: the records are back all the same.
  }
}

holder_counts record_holder::counts() const noexcept {
  std::lock_guard lock{mutex_};
  holder_counts counts = counts_;
  if (elsewhere_.load(std::memory_order_relaxed)) {
    counts.held_elsewhere += std::chrono::steady_clock::now() - since_;
  }
  return counts;
}

}  // namespace launchwatch::detail::cuda_bridge
