// fork() while threads scope, launch and attribute (review 2026-12-01b, findings 2 and 3; issue 21,
// "One fork model"): the fork must complete, and the child must be able to enter new scopes, launch
// and attribute at once.
//
// A hang must fail the test in seconds, not hang ctest: the parent runs a watchdog that ends the
// process with a message when no fork completes for `hang_limit`, and each child of the second test
// runs under alarm(5).

#include <launchwatch/launchwatch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/conformance_kernels.hpp"

namespace launchwatch {
namespace {

using conformance::fill;
using namespace std::chrono_literals;

constexpr auto hang_limit = 10s;  // longer than a child's alarm(5)

/// Ends the process, saying so, when `completed` has not moved for `hang_limit` while it watches:
/// a fork stuck in its prepare step cannot be interrupted otherwise.
class fork_watchdog {
 public:
  explicit fork_watchdog(const std::atomic<int>& completed)
      : thread_{[this, &completed] {
          int seen = completed.load();
          auto moved = std::chrono::steady_clock::now();
          while (!stop_.load()) {
            std::this_thread::sleep_for(10ms);
            const int now = completed.load();
            if (now != seen) {
              seen = now;
              moved = std::chrono::steady_clock::now();
            } else if (std::chrono::steady_clock::now() - moved > hang_limit) {
              std::fprintf(stderr, "HANG: no fork completed in %lld s after %d forks\n",
                           static_cast<long long>(hang_limit.count()), now);
              std::fflush(stderr);
              std::_Exit(3);
            }
          }
        }} {}
  ~fork_watchdog() {
    stop_.store(true);
    thread_.join();
  }
  fork_watchdog(const fork_watchdog&) = delete;
  fork_watchdog& operator=(const fork_watchdog&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Waits for `child`; returns its exit status, or 128 + the signal that ended it.
int outcome_of(pid_t child) {
  int raw = 0;
  while (::waitpid(child, &raw, 0) != child) {
  }
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  return WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
}

TEST(Fork, CompletesWhileOneThreadHoldsAScopeOpenAndAnotherLaunchesOutsideEveryScope) {
  // Finding 2: fork's prepare step took the scoped threads' lock and then waited for the slot's
  // readers, while a launch held the slot and waited for that lock to find the sole scoped thread.
  attribution_options options;
  options.timing = timing_request::none;
  options.unscoped = unscoped_launches::sole_scoped_thread;
  auto observer = std::make_shared<attribution>(options);
  launch_observation watching{observer};
  std::atomic<bool> stop{false};
  std::atomic<bool> scoped{false};
  std::thread holding{[&] {
    scope held{"held open"};
    scoped.store(true);
    while (!stop.load()) std::this_thread::sleep_for(1ms);
  }};
  while (!scoped.load()) std::this_thread::yield();
  std::thread launching{[&] {
    auto client = client::cpu();
    auto values = client.empty<int>(8);
    while (!stop.load()) {
      for (int i = 0; i < 64; ++i) client.launch(fill{values.view(), i}, cube_count{1}, cube_dim{8});
      client.sync();
      (void)observer->collect();
    }
  }};
  std::this_thread::sleep_for(20ms);

  constexpr int forks = 1000;
  std::atomic<int> completed{0};
  int failed = 0;
  {
    fork_watchdog watchdog{completed};
    for (int round = 0; round < forks; ++round) {
      const pid_t child = ::fork();
      ASSERT_GE(child, 0) << "fork failed";
      if (child == 0) ::_exit(0);
      if (outcome_of(child) != 0) ++failed;
      completed.fetch_add(1);
    }
  }
  stop.store(true);
  launching.join();
  holding.join();
  EXPECT_EQ(completed.load(), forks);
  EXPECT_EQ(failed, 0) << "children that did not exit 0";
}

#if defined(__SANITIZE_THREAD__)
constexpr bool under_thread_sanitizer = true;
#else
constexpr bool under_thread_sanitizer = false;
#endif

/// The child's part: a new scope, a launch on a new client, an attribution that places the launch
/// in that scope. Returns the exit status (0 when all of that worked).
///
/// Under ThreadSanitizer the launch is a dry run (validated, prepared, reported and attributed, not
/// executed): this ThreadSanitizer cannot start a thread in a child of a multi-threaded parent (it
/// reports "dup thread with used id"), and a dry run starts no stream worker.
int enter_launch_and_attribute(int round) {
  const std::string name = "child " + std::to_string(round);
  auto mine = std::make_shared<attribution>();
  launch_observation watching{mine};
  auto client = client::cpu();
  auto values = client.empty<int>(8);
  {
    scope entered{name};
    if (under_thread_sanitizer) {
      dry_run_scope dry;
      client.launch(fill{values.view(), round}, cube_count{1}, cube_dim{8});
    } else {
      client.launch(fill{values.view(), round}, cube_count{1}, cube_dim{8});
    }
  }
  if (!under_thread_sanitizer) {
    client.sync();
    if (client.read(values) != std::vector<int>(8, round)) return 4;
  }
  const pass_record pass = mine->collect();
  if (pass.launches.size() != 1) return 5;
  const auto& scope_of_launch = pass.launches.front().scope;
  if (!scope_of_launch || pass.scopes.at(*scope_of_launch).name != name) return 6;
  return 0;
}

TEST(Fork, LeavesTheChildAbleToEnterNewScopesLaunchAndAttributeWhileAnotherThreadInternsNames) {
  // Finding 3: the child inherited the scope path table (and the other attribution locks) held by
  // the thread that was interning a new name at the fork, and hung at its first new scope.
  auto observer = std::make_shared<attribution>();
  launch_observation watching{observer};
  std::atomic<bool> stop{false};
  std::atomic<long> entered{0};
  std::thread naming{[&] {
    for (long i = 0; !stop.load(); ++i) {
      scope s{"scope " + std::to_string(i)};
      entered.fetch_add(1);
    }
  }};
  while (entered.load() == 0) std::this_thread::yield();

  constexpr int forks = 100;
  std::atomic<int> completed{0};
  std::vector<int> statuses;
  {
    fork_watchdog watchdog{completed};
    for (int round = 0; round < forks; ++round) {
      const pid_t child = ::fork();
      ASSERT_GE(child, 0) << "fork failed";
      if (child == 0) {
        ::alarm(5);
        int status = 2;
        try {
          status = enter_launch_and_attribute(round);
        } catch (...) {
          status = 3;
        }
        ::_exit(status);
      }
      statuses.push_back(outcome_of(child));
      completed.fetch_add(1);
      // The naming thread's intervals accumulate in the parent's attribution: drop them now and
      // then (collect also takes the locks the fork takes).
      if (round % 16 == 15) (void)observer->collect();
    }
  }
  stop.store(true);
  naming.join();
  int failed = 0;
  for (int round = 0; round < forks; ++round) {
    if (statuses[round] != 0) {
      ++failed;
      if (failed <= 5) {
        ADD_FAILURE() << "child of fork " << round << " ended with " << statuses[round]
                      << (statuses[round] == 128 + SIGALRM ? " (it hung: SIGALRM)" : "");
      }
    }
  }
  EXPECT_EQ(failed, 0) << "of " << forks << " children";
}

}  // namespace
}  // namespace launchwatch
