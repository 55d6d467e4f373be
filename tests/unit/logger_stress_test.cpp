// Several threads recording launches at once while others summarise, flush and move the output:
// every launch is written once and counted once. Run under the TSan preset too.

#include <launchwatch/logger.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace launchwatch {
namespace {

using namespace std::chrono_literals;

constexpr int recorder_count = 4;
constexpr int launches_per_thread = 2000;
constexpr std::string_view kernel_names[recorder_count] = {"k0", "k1", "k2", "k3"};

profiling_logger& logger() { return profiling_logger::instance(); }

profile_duration lasting(std::chrono::nanoseconds length) {
  const auto start = std::chrono::steady_clock::now();
  const auto ticks = profile_ticks::from_start_end(start, start + length);
  return profile_duration{[ticks]() noexcept -> std::optional<profile_ticks> { return ticks; },
                          timing_method::device};
}

launch_info launch(int thread) {
  launch_info info;
  info.kernel = kernel_names[thread];
  info.stream = static_cast<std::uint64_t>(thread);
  return info;
}

std::size_t count_lines_starting(const std::string& text, std::string_view prefix) {
  std::size_t count = 0;
  std::istringstream lines{text};
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, prefix.size(), prefix) == 0) ++count;
  }
  return count;
}

/// The launches counted by every summary's total row.
std::uint64_t summarised_launches(const std::string& text) {
  static const std::regex total_row{R"(^total +([0-9]+) +[0-9.]+ [a-z]+ +100\.0%$)"};
  std::uint64_t count = 0;
  std::istringstream lines{text};
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, total_row)) count += std::stoull(match[1].str());
  }
  return count;
}

class ProfilingLoggerStress : public ::testing::Test {
 protected:
  void SetUp() override { detail::reset_profiling_logger_for_testing(); }
  void TearDown() override { detail::reset_profiling_logger_for_testing(); }

  // Members, so they outlive the writer that TearDown stops.
  std::ostringstream out_;
  std::ostringstream second_;
};

TEST_F(ProfilingLoggerStress, EveryLaunchRecordedByManyThreadsIsWrittenOnceAndSummarisedOnce) {
  logger().set_output(log_output::stream(out_));
  logger().set_level(profile_level::medium);
  logger().start();

  std::atomic<int> recording{recorder_count};
  std::vector<std::jthread> threads;
  for (int t = 0; t < recorder_count; ++t) {
    threads.emplace_back([t, &recording] {
      for (int i = 0; i < launches_per_thread; ++i) logger().record(launch(t), lasting(1us));
      recording.fetch_sub(1);
    });
  }
  // Syncs racing with the launches, as clients on other threads would.
  threads.emplace_back([&recording] {
    while (recording.load() > 0) {
      logger().write_summary();
      logger().flush();
    }
  });
  threads.clear();  // joins
  logger().write_summary();

  const auto text = out_.str();
  constexpr auto total = std::uint64_t{recorder_count} * launches_per_thread;
  EXPECT_EQ(count_lines_starting(text, "launch k"), total);
  EXPECT_EQ(summarised_launches(text), total);
}

TEST_F(ProfilingLoggerStress, NoLineIsLostWhileTheOutputMovesUnderConcurrentRecords) {
  logger().set_output(log_output::stream(out_));
  logger().set_level(profile_level::execution_only);
  logger().start();

  std::atomic<int> recording{recorder_count};
  std::vector<std::jthread> threads;
  for (int t = 0; t < recorder_count; ++t) {
    threads.emplace_back([t, &recording] {
      for (int i = 0; i < launches_per_thread; ++i) logger().record_execution(launch(t));
      recording.fetch_sub(1);
    });
  }
  threads.emplace_back([&] {
    bool to_second = true;
    while (recording.load() > 0) {
      logger().set_output(log_output::stream(to_second ? second_ : out_));
      to_second = !to_second;
    }
  });
  threads.clear();
  logger().flush();

  const auto lines = count_lines_starting(out_.str(), "launch k") +
                     count_lines_starting(second_.str(), "launch k");
  EXPECT_EQ(lines, std::uint64_t{recorder_count} * launches_per_thread);
}

}  // namespace
}  // namespace launchwatch
