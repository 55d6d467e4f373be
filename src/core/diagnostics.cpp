#include "core/interface/diagnostics.hpp"

#include <memory>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace launchwatch::detail {
namespace {

constexpr auto warning_count = static_cast<std::size_t>(once_warning::count_);

std::array<std::atomic<bool>, warning_count>& said() {
  static std::array<std::atomic<bool>, warning_count> flags{};
  return flags;
}

}  // namespace

spdlog::logger& diagnostics() {
  // Kept alive for the whole process: warnings can be said from threads still running at exit.
  static std::shared_ptr<spdlog::logger>* const logger = [] {
    auto existing = spdlog::get("launchwatch");
    if (!existing) {
      existing = std::make_shared<spdlog::logger>(
          "launchwatch", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
      spdlog::register_logger(existing);
    }
    return new std::shared_ptr<spdlog::logger>(std::move(existing));
  }();
  return **logger;
}

bool first_time(once_warning warning) noexcept {
  auto& flag = said()[static_cast<std::size_t>(warning)];
  // Read first: after the first time every launching thread only reads the flag's cache line,
  // where an exchange would write it and pass it from core to core on every refused launch.
  if (flag.load(std::memory_order_relaxed)) return false;
  return !flag.exchange(true, std::memory_order_relaxed);
}

void reset_once_warnings_for_testing() noexcept {
  for (auto& flag : said()) flag.store(false, std::memory_order_relaxed);
}

}  // namespace launchwatch::detail
