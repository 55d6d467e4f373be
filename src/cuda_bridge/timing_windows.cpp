// The timing windows' thread (timing_windows.hpp).
#include "timing_windows.hpp"

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "core/interface/thread_name.hpp"

namespace launchwatch::detail::cuda_bridge {

void require_positive(const cuda_timing_windows& windows) {
  if (windows.on.count() > 0 && windows.off.count() > 0) return;
  throw configuration_error{fmt::format(
      "cuda_bridge_options::timing_windows of {} ms on and {} ms off: both must be positive (as "
      "windows:200/800 in launchwatch run)",
      windows.on.count(), windows.off.count())};
}

timing_windows::timing_windows(bridge_core& core, const cuda_timing_windows& windows)
    : core_{core}, windows_{windows} {
  require_positive(windows_);
  thread_ = std::thread{[this] {
    name_this_thread("lw-windows");
    alternate();
  }};
}

timing_windows::~timing_windows() { stop(); }

void timing_windows::stop() noexcept {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool timing_windows::stopped_within(std::chrono::milliseconds span) {
  std::unique_lock lock{mutex_};
  return wake_.wait_for(lock, span, [this] { return stopping_; });
}

void timing_windows::alternate() {
  for (;;) {
    {
      std::lock_guard lock{mutex_};
      if (stopping_) return;
    }
    const bool opened = core_.open_timing_window();
    const bool stopped = stopped_within(windows_.on);
    if (opened) core_.close_timing_window();
    if (stopped || stopped_within(windows_.off)) return;
  }
}

}  // namespace launchwatch::detail::cuda_bridge
