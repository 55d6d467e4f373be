// A log sink that keeps what launchwatch's logger says, so a test can count warnings.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/sinks/base_sink.h>

#include "core/interface/diagnostics.hpp"

namespace launchwatch::testing {

/// Collects the messages logged at warning level and above while it is attached.
class capturing_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<std::string> messages() {
    std::lock_guard lock{mutex_};
    return messages_;
  }

  /// How many captured messages contain `needle`.
  std::size_t count_containing(const std::string& needle) {
    const auto all = messages();
    return static_cast<std::size_t>(std::count_if(all.begin(), all.end(), [&](const auto& m) {
      return m.find(needle) != std::string::npos;
    }));
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (msg.level >= spdlog::level::warn) {
      messages_.emplace_back(msg.payload.data(), msg.payload.size());
    }
  }
  void flush_() override {}

 private:
  std::vector<std::string> messages_;
};

/// Attaches a capturing sink to the `launchwatch` logger for its lifetime, and forgets the
/// once-per-process warnings already said so the test sees its own.
class [[nodiscard]] captured_log {
 public:
  captured_log() : sink_{std::make_shared<capturing_sink>()} {
    detail::reset_once_warnings_for_testing();
    detail::diagnostics().sinks().push_back(sink_);
  }
  ~captured_log() {
    auto& sinks = detail::diagnostics().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  captured_log(const captured_log&) = delete;
  captured_log& operator=(const captured_log&) = delete;

  capturing_sink& operator*() { return *sink_; }
  capturing_sink* operator->() { return sink_.get(); }

 private:
  std::shared_ptr<capturing_sink> sink_;
};

}  // namespace launchwatch::testing
