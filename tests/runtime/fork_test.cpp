// A forked child (review finding 4): it inherits every thread's state but only the forking thread,
// and must be able to launch, sync, read and log, or be told clearly what it cannot do; never hang.
//
// Each test forks; the child reports through its exit status and is killed by an alarm if it hangs,
// so a regression fails the test instead of hanging it.

#include <launchwatch/launchwatch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cpu/cpu_pool.hpp"
#include "conformance/conformance_kernels.hpp"
#include "support/recording_observer.hpp"
#include "support/sanitizers.hpp"

namespace launchwatch {
namespace {

using testing::under_address_sanitizer;
using testing::under_thread_sanitizer;

using conformance::fill;

/// What became of a child: its exit status, or the signal that ended it.
struct child_outcome {
  bool exited = false;
  int status = -1;
  int signal = 0;
};

/// Forks; the child runs `body` (returning its exit status) under a 30 s alarm.
template <class Body>
child_outcome in_a_forked_child(Body body) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(30);
    int status = 1;
    try {
      status = body();
    } catch (...) {
      status = 2;
    }
    std::_Exit(status);
  }
  child_outcome outcome;
  int raw = 0;
  if (child < 0 || ::waitpid(child, &raw, 0) != child) return outcome;
  if (WIFEXITED(raw)) {
    outcome.exited = true;
    outcome.status = WEXITSTATUS(raw);
  } else if (WIFSIGNALED(raw)) {
    outcome.signal = WTERMSIG(raw);
  }
  return outcome;
}

class ForkedChild : public ::testing::Test {
 protected:
  void SetUp() override {
    if (under_thread_sanitizer) {
      GTEST_SKIP() << "ThreadSanitizer does not support threads started after a multi-threaded fork";
    }
    if (under_address_sanitizer) {
      GTEST_SKIP() << testing::address_sanitizer_fork_unsafe;
    }
    detail::reset_profiling_logger_for_testing();
  }
  void TearDown() override { detail::reset_profiling_logger_for_testing(); }
};

TEST_F(ForkedChild, LaunchesSyncsAndReadsOnTheStreamsItMakesItself) {
  auto client = client::cpu();
  auto values = client.empty<int>(4096);
  client.launch(fill{values.view(), 1}, cube_count{16}, cube_dim{256});  // the pool is started
  client.sync();
  const auto outcome = in_a_forked_child([&] {
    client.launch(fill{values.view(), 2}, cube_count{16}, cube_dim{256});
    client.sync();
    return client.read(values) == std::vector<int>(4096, 2) ? 0 : 3;
  });
  ASSERT_TRUE(outcome.exited) << "the child was killed by signal " << outcome.signal
                              << (outcome.signal == SIGALRM ? " (it hung)" : "");
  EXPECT_EQ(outcome.status, 0);
  EXPECT_EQ(client.read(values), std::vector<int>(4096, 1)) << "the parent is unaffected";
}

TEST_F(ForkedChild, LogsWithAWriterOfItsOwn) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("launchwatch_fork_" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(path);
  auto& logger = profiling_logger::instance();
  logger.set_output(log_output::file(path));
  logger.set_level(profile_level::medium);
  auto client = client::cpu();
  auto values = client.empty<int>(8);
  client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
  client.sync();  // the writer runs, and has summarised
  const auto outcome = in_a_forked_child([&] {
    client.launch(fill{values.view(), 2}, cube_count{1}, cube_dim{8});
    client.sync();  // writes a summary: waits for the child's own writer
    logger.flush();
    return 0;
  });
  ASSERT_TRUE(outcome.exited) << "the child was killed by signal " << outcome.signal;
  EXPECT_EQ(outcome.status, 0);
  logger.flush();
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  std::size_t summaries = 0;
  for (std::size_t at = 0; (at = text.str().find("profile summary", at)) != std::string::npos; ++at) {
    ++summaries;
  }
  EXPECT_EQ(summaries, 2u) << "the parent's and the child's\n" << text.str();
  detail::reset_profiling_logger_for_testing();
  std::filesystem::remove(path);
}

TEST_F(ForkedChild, InstallsAnObservationWhileTheParentWasLaunchingFromAnotherThread) {
  auto client = client::cpu();
  auto observer = std::make_shared<testing::recording_observer>();
  launch_observation watching{observer};
  std::atomic<bool> stop{false};
  // Keeps taking the observer slot's read lock, so the fork is likely to catch a reader inside.
  std::thread launching{[&] {
    auto mine = client.empty<int>(8);
    while (!stop.load()) client.launch(fill{mine.view(), 1}, cube_count{1}, cube_dim{8});
    client.sync();
  }};
  const auto outcome = in_a_forked_child([&] {
    auto values = client.empty<int>(8);
    auto counted = std::make_shared<testing::recording_observer>();
    {
      launch_observation again{counted};
      client.launch(fill{values.view(), 4}, cube_count{1}, cube_dim{8});
    }
    return counted->names().size() == 1 && client.read(values) == std::vector<int>(8, 4) ? 0 : 3;
  });
  stop.store(true);
  launching.join();
  ASSERT_TRUE(outcome.exited) << "the child was killed by signal " << outcome.signal;
  EXPECT_EQ(outcome.status, 0);
}

// A thread making its process's first CPU launch starts the pool under a lock; a fork at that moment
// left the lock held in the child, whose first launch then waited for it forever (seen as a hang of
// the test above in a loaded release build). The thread here holds that lock across the fork, as
// the starting thread would: the fork waits for it, and the child launches.
TEST_F(ForkedChild, LaunchesAfterAForkWhileAnotherThreadWasStartingTheCpuPool) {
  auto client = client::cpu();
  std::atomic<bool> held{false};
  std::thread starting{[&] {
    std::lock_guard lock{detail::cpu_pool::starting_lock()};
    held.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }};
  while (!held.load()) std::this_thread::yield();
  const auto outcome = in_a_forked_child([&] {
    auto values = client.empty<int>(4096);
    client.launch(fill{values.view(), 5}, cube_count{16}, cube_dim{256});
    return client.read(values) == std::vector<int>(4096, 5) ? 0 : 3;
  });
  starting.join();
  ASSERT_TRUE(outcome.exited) << "the child was killed by signal " << outcome.signal
                              << (outcome.signal == SIGALRM ? " (it hung)" : "");
  EXPECT_EQ(outcome.status, 0);
}

TEST_F(ForkedChild, IsToldClearlyThatAPinnedStreamMadeBeforeTheForkCannotLaunch) {
  auto client = client::cpu();
  auto pinned = client.pinned();
  auto values = pinned.empty<int>(8);
  pinned.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
  pinned.sync();
  const auto outcome = in_a_forked_child([&] {
    try {
      pinned.launch(fill{values.view(), 2}, cube_count{1}, cube_dim{8});
    } catch (const device_error& error) {
      return std::string{error.what()}.find("forked") != std::string::npos ? 0 : 4;
    }
    return 3;
  });
  ASSERT_TRUE(outcome.exited) << "the child was killed by signal " << outcome.signal;
  EXPECT_EQ(outcome.status, 0);
}

}  // namespace
}  // namespace launchwatch
