// The names launchwatch's threads give themselves (core/interface/thread_name.hpp), as the tools
// that watch the process read them.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/interface/thread_name.hpp"
#include "support/thread_names.hpp"

namespace launchwatch {
namespace {

/// Runs a thread that names itself `name`, and reads the process's thread names while it lives.
bool seen_while_named(const char* name, const std::string& expected) {
  std::mutex mutex;
  std::condition_variable changed;
  bool named = false;
  bool done = false;
  std::thread thread{[&] {
    detail::name_this_thread(name);
    std::unique_lock lock{mutex};
    named = true;
    changed.notify_all();
    changed.wait(lock, [&] { return done; });
  }};
  bool seen = false;
  {
    std::unique_lock lock{mutex};
    changed.wait(lock, [&] { return named; });
    seen = testing::has_thread_named(expected);
    done = true;
    changed.notify_all();
  }
  thread.join();
  return seen;
}

TEST(ThreadName, AThreadThatNamesItselfShowsThatNameToToolsReadingTheProcess) {
  if (testing::thread_names().empty()) GTEST_SKIP() << "no /proc/self/task here";
  EXPECT_TRUE(seen_while_named("lw-test-name", "lw-test-name"));
}

TEST(ThreadName, ANameLongerThanLinuxKeepsIsCutToFifteenCharactersNotRefused) {
  if (testing::thread_names().empty()) GTEST_SKIP() << "no /proc/self/task here";
  EXPECT_TRUE(seen_while_named("lw-a-very-long-thread-name", "lw-a-very-long-"));
}

}  // namespace
}  // namespace launchwatch
