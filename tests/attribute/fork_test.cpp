// fork() while threads scope, launch and attribute (review 2026-12-01b, findings 2 and 3; issue 21,
// "One fork model"): the fork must complete, and the child must be able to enter new scopes, launch
// and attribute at once.
//
// A hang must fail the test, not hang ctest: the parent runs a watchdog that ends the process with
// a message when a fork() call does not return within `hang_limit`, and a child that has not ended
// within `child_limit` is killed and reported as hung (the forking stops there).

#include <launchwatch/launch_path.hpp>
#include <launchwatch/launchwatch.hpp>

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "attribute/fold_thread.hpp"
#include "conformance/conformance_kernels.hpp"
#include "support/measurements.hpp"
#include "support/sanitizers.hpp"

namespace launchwatch {
namespace {

using conformance::fill;
using namespace std::chrono_literals;

constexpr auto hang_limit = 10s;
// A child's whole life. In the release build one lasts milliseconds; under AddressSanitizer on a
// loaded machine (2 cores, load 18) the second test's children took over 5 s and then passed, so
// the limit is generous: a child that hangs waits on a lock no thread will release, and still
// fails the test, 30 s later.
constexpr auto child_limit = 30s;
/// What outcome_of returns for a child it killed after `child_limit`.
constexpr int hung = 1000;

/// Forks through `fork()` and ends the process, saying so, when one of those calls has not returned
/// for `hang_limit`: a fork stuck in its prepare step cannot be interrupted otherwise.
///
/// Only the fork() call is timed. A child that hangs is killed by outcome_of and reported as
/// hung; the parent's work between forks is no fork (under AddressSanitizer on a loaded
/// machine, collecting the naming thread's intervals took over 10 s, which a watchdog timing
/// whole rounds reported as a hung fork).
class fork_watchdog {
 public:
  fork_watchdog()
      : thread_{[this] {
          while (!stop_.load()) {
            std::this_thread::sleep_for(10ms);
            const auto since = forking_since_.load();
            if (since != not_forking && now_ns() - since > hang_limit.count() * 1'000'000'000) {
              std::fprintf(stderr, "HANG: fork() did not return in %lld s, after %d forks\n",
                           static_cast<long long>(hang_limit.count()), forks_.load());
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

  /// ::fork(), timed. In the child (where the watchdog's thread is not) it returns 0 and the
  /// child must not return into the watchdog: it ends by _exit.
  pid_t fork() {
    forking_since_.store(now_ns());
    const pid_t child = ::fork();
    if (child != 0) {
      forking_since_.store(not_forking);
      forks_.fetch_add(1);
    }
    return child;
  }

  /// The forks that returned in the parent so far.
  int forks() const { return forks_.load(); }

 private:
  static constexpr std::int64_t not_forking = -1;
  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> forking_since_{not_forking};
  std::atomic<int> forks_{0};
  std::thread thread_;
};

/// Waits for `child`; returns its exit status, 128 + the signal that ended it, or `hung` when it
/// had not ended after `child_limit` (it is killed then).
int outcome_of(pid_t child) {
  const auto deadline = std::chrono::steady_clock::now() + child_limit;
  int raw = 0;
  for (;;) {
    const pid_t ended = ::waitpid(child, &raw, WNOHANG);
    if (ended == child) break;
    if (ended < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      while (::waitpid(child, &raw, 0) < 0 && errno == EINTR) {
      }
      return hung;
    }
    std::this_thread::sleep_for(100us);
  }
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  return WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
}

/// `status` (from outcome_of) in words, for a failure message.
std::string said(int status) {
  if (status == hung) return "hung (killed after " + std::to_string(child_limit.count()) + " s)";
  if (status > 128) return "ended by signal " + std::to_string(status - 128);
  return "exited with " + std::to_string(status);
}

/// Forks `forks` children, one at a time: each runs `child(round)` and exits with what it returns
/// (3 when it throws); the parent runs `between(round)` after each child ended. Returns each
/// child's outcome (outcome_of), stopping after the first that hung.
template <class Child, class Between>
std::vector<int> fork_rounds(int forks, Child child, Between between) {
  std::vector<int> statuses;
  fork_watchdog watchdog;
  for (int round = 0; round < forks; ++round) {
    const pid_t pid = watchdog.fork();
    if (pid < 0) {
      ADD_FAILURE() << "fork failed";
      break;
    }
    if (pid == 0) {
      int status = 2;
      try {
        status = child(round);
      } catch (...) {
        status = 3;
      }
      ::_exit(status);
    }
    statuses.push_back(outcome_of(pid));
    if (statuses.back() == hung) break;  // the next would likely hang too: say so now
    between(round);
  }
  return statuses;
}

/// Fails the test for each child of `statuses` that did not exit with 0 (the first five named,
/// with `meaning` of a status, if it has one), and when fewer than `forks` children ran.
template <class Meaning>
void expect_every_child_passed(const std::vector<int>& statuses, int forks, Meaning meaning) {
  int failed = 0;
  for (std::size_t round = 0; round < statuses.size(); ++round) {
    if (statuses[round] != 0) {
      ++failed;
      if (failed <= 5) {
        ADD_FAILURE() << "child of fork " << round << " " << said(statuses[round])
                      << meaning(statuses[round]);
      }
    }
  }
  EXPECT_EQ(statuses.size(), static_cast<std::size_t>(forks)) << "forks made";
  EXPECT_EQ(failed, 0) << "of " << forks << " children";
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
  const auto statuses = fork_rounds(
      forks, [](int) { return 0; }, [](int) {});
  stop.store(true);
  launching.join();
  holding.join();
  expect_every_child_passed(statuses, forks, [](int) { return ""; });
}

using testing::under_thread_sanitizer;

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
  // The naming thread allocates all the time and the child must allocate (a scope, a client, a
  // collect): testing::address_sanitizer_fork_unsafe says why that hangs under ASan.
  if (testing::under_address_sanitizer) GTEST_SKIP() << testing::address_sanitizer_fork_unsafe;
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
  const auto statuses = fork_rounds(forks, enter_launch_and_attribute, [&](int round) {
    // The naming thread's intervals accumulate in the parent's attribution: drop them now and
    // then (collect also takes the locks the fork takes).
    if (round % 16 == 15) (void)observer->collect();
  });
  stop.store(true);
  naming.join();
  expect_every_child_passed(statuses, forks, [](int) { return ""; });
}

TEST(Fork, LeavesAnAggregateOnlyChildFoldingItsOwnLaunchesWithoutTheParentsFoldThread) {
  // The parent's fold thread is not in the child, and its lock and queue may have been in use at
  // the fork: the child folds on its own thread, and counts each of its launches once.
  if (testing::under_address_sanitizer) GTEST_SKIP() << testing::address_sanitizer_fork_unsafe;
  detail::fold_thread::decide_for_testing(true);  // whatever the machine's cores
  attribution_options options;
  options.aggregate_only = true;
  auto observer = std::make_shared<attribution>(options);
  launch_observation watching{observer};
  const auto launch_measured = [] {
    launch_info info;
    info.kernel = "k";
    info.stream = 1;
    launch_path::notify_launch(info);
    launch_path::notify_profiled("k", testing::measured_on_device(1us));
  };
  // Keeps the parent's fold thread busy across the forks.
  std::atomic<bool> stop{false};
  std::atomic<long> launched{0};
  std::thread launching{[&] {
    while (!stop.load()) {
      launch_measured();
      launched.fetch_add(1);
    }
  }};
  while (launched.load() < 3 * 4096) std::this_thread::yield();

  constexpr int forks = 20;
  constexpr std::size_t child_launches = 3 * 4096 + 7;
  const auto statuses = fork_rounds(
      forks,
      [&](int) {
        (void)observer->collect_summary();  // what the parent had launched: not the child's
        for (std::size_t i = 0; i < child_launches; ++i) launch_measured();
        const auto summary = observer->collect_summary();
        return summary.launches == child_launches && summary.timed_launches == child_launches ? 0
                                                                                              : 4;
      },
      [](int) {});
  stop.store(true);
  launching.join();
  expect_every_child_passed(statuses, forks, [](int status) {
    return status == 4 ? " (its launches were not each counted once)" : "";
  });
  const auto summary = observer->collect_summary();
  EXPECT_EQ(summary.launches, static_cast<std::size_t>(launched.load()));
  detail::fold_thread::decide_for_testing(std::nullopt);
}

}  // namespace
}  // namespace launchwatch
