// The profiling logger pointed at a string for one test, and put back before the string goes.
#pragma once

#include <sstream>
#include <string>

#include <launchwatch/logger.hpp>

namespace launchwatch::testing {

/// Points the process's profiling logger at a string at `level` for its lifetime; the logger is
/// reset before the string, which its writer thread writes to, is destroyed.
class [[nodiscard]] profiling_log {
 public:
  explicit profiling_log(profile_level level) {
    auto& logger = profiling_logger::instance();
    logger.set_output(log_output::stream(text_));
    logger.set_level(level);
  }
  ~profiling_log() { detail::reset_profiling_logger_for_testing(); }
  profiling_log(const profiling_log&) = delete;
  profiling_log& operator=(const profiling_log&) = delete;
  profiling_log(profiling_log&&) = delete;
  profiling_log& operator=(profiling_log&&) = delete;

  /// What the logger wrote so far, after flushing its writer.
  std::string text() {
    profiling_logger::instance().flush();
    return text_.str();
  }

 private:
  std::ostringstream text_;
};

}  // namespace launchwatch::testing
