// What a launch source other than the native runtime asks of the launch path (launch_path.hpp):
// behaviour 6 for replayed graph nodes (current_observation, deliver_replayed), whether the thread
// is inside an observer, the watch-state listener, the reported_here mark; and
// launch_observation::is_installed.

#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

using testing::recording_observer;
using testing::replay_recording_observer;
using testing::Replayed;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

static_assert(!std::is_copy_constructible_v<launch_path::reported_here>);
static_assert(!std::is_move_constructible_v<launch_path::reported_here>);
static_assert(!std::is_copy_assignable_v<launch_path::reported_here>);
static_assert(!std::is_move_assignable_v<launch_path::reported_here>);

replayed_node node_of(std::string_view kernel) {
  replayed_node node;
  node.kernel = kernel;
  node.captured_launch = 7;
  node.replay = 1;
  const auto start = std::chrono::steady_clock::now();
  node.ticks = profile_ticks::from_start_end(start, start + std::chrono::microseconds{3});
  return node;
}

// current_observation

TEST(LaunchSources, TheCurrentObservationIsEmptyWhenNothingIsInstalled) {
  EXPECT_TRUE(launch_path::current_observation().empty());
}

TEST(LaunchSources, TheCurrentObservationNamesTheInstalledOneUntilAnotherIsInstalled) {
  launch_observation first{std::make_shared<recording_observer>()};
  const auto a = launch_path::current_observation();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, launch_path::current_observation());
  launch_observation second{std::make_shared<recording_observer>()};
  EXPECT_NE(a, launch_path::current_observation());
}

// Behaviour 6 for replayed graph nodes: deliver_replayed

TEST(LaunchSources, AReplayedNodeReachesTheObservationInstalledWhenItsReplayWasLaunched) {
  auto watcher = std::make_shared<replay_recording_observer>();
  launch_observation watching{watcher};
  const auto launched_under = launch_path::current_observation();
  EXPECT_TRUE(launch_path::deliver_replayed(launched_under, node_of("gemm")));
  EXPECT_THAT(watcher->replays(), ElementsAre(Replayed("gemm")));
}

TEST(LaunchSources, AReplayedNodeDoesNotReachAnObservationThatReplacedTheOneItBelongsTo) {
  auto first = std::make_shared<replay_recording_observer>();
  auto second = std::make_shared<replay_recording_observer>();
  launch_observation watching{first};
  const auto launched_under = launch_path::current_observation();
  launch_observation replacing{second};
  EXPECT_FALSE(launch_path::deliver_replayed(launched_under, node_of("gemm")));
  EXPECT_THAT(first->replays(), IsEmpty());
  EXPECT_THAT(second->replays(), IsEmpty());
}

TEST(LaunchSources, AReplayedNodeReachesItsObservationAgainOnceTheReplacementIsDropped) {
  auto first = std::make_shared<replay_recording_observer>();
  launch_observation watching{first};
  const auto launched_under = launch_path::current_observation();
  { launch_observation replacing{std::make_shared<replay_recording_observer>()}; }
  EXPECT_TRUE(launch_path::deliver_replayed(launched_under, node_of("gemm")));
  EXPECT_THAT(first->replays(), ElementsAre(Replayed("gemm")));
}

TEST(LaunchSources, AReplayedNodeDoesNotReachTheObservationPutBackWhenItsOwnEnded) {
  auto below = std::make_shared<replay_recording_observer>();
  launch_observation watching{below};
  launch_path::observation_ref launched_under;
  {
    launch_observation above{std::make_shared<replay_recording_observer>()};
    launched_under = launch_path::current_observation();
  }
  EXPECT_FALSE(launch_path::deliver_replayed(launched_under, node_of("gemm")));
  EXPECT_THAT(below->replays(), IsEmpty());
}

TEST(LaunchSources, AReplayedNodeDoesNotReachItsObserverInstalledAgainByANewObservation) {
  auto watcher = std::make_shared<replay_recording_observer>();
  launch_path::observation_ref launched_under;
  {
    launch_observation watching{watcher};
    launched_under = launch_path::current_observation();
  }
  EXPECT_FALSE(launch_path::deliver_replayed(launched_under, node_of("ended")));
  launch_observation again{watcher};
  EXPECT_FALSE(launch_path::deliver_replayed(launched_under, node_of("again")));
  EXPECT_THAT(watcher->replays(), IsEmpty());
}

TEST(LaunchSources, AReplayedNodeDoesNotReachAnObserverThatDoesNotWatchReplays) {
  launch_observation watching{std::make_shared<recording_observer>()};
  EXPECT_FALSE(launch_path::deliver_replayed(launch_path::current_observation(), node_of("gemm")));
}

TEST(LaunchSources, AnEmptyObservationReferenceDeliversNothing) {
  const auto none = launch_path::current_observation();
  auto watcher = std::make_shared<replay_recording_observer>();
  launch_observation watching{watcher};
  EXPECT_FALSE(launch_path::deliver_replayed(none, node_of("gemm")));
  EXPECT_THAT(watcher->replays(), IsEmpty());
}

TEST(LaunchSources, AnExceptionFromReplayedIsContained) {
  // Bespoke: the point is an observer whose replayed() throws.
  class throwing_watcher : public launch_observer, public graph_replay_observer {
   public:
    void launched(std::string_view) override {}
    void replayed(const replayed_node&) override { throw std::runtime_error{"replayed broke"}; }
  };
  launch_observation watching{std::make_shared<throwing_watcher>()};
  EXPECT_TRUE(launch_path::deliver_replayed(launch_path::current_observation(), node_of("gemm")));
}

// inside_observer

/// Records, in `launched`, whether the launch path says it is inside an observer. Bespoke: the
/// point is what the launch path answers from inside a callback.
class reentry_prober : public launch_observer {
 public:
  void launched(std::string_view) override { inside = launch_path::inside_observer(); }
  bool inside = false;
};

TEST(LaunchSources, InsideAnObserverMethodTheThreadIsInsideAnObserver) {
  auto prober = std::make_shared<reentry_prober>();
  launch_observation watching{prober};
  launch_path::notify_launch("a_kernel");
  EXPECT_TRUE(prober->inside);
}

TEST(LaunchSources, OutsideObserverMethodsTheThreadIsNotInsideAnObserver) {
  EXPECT_FALSE(launch_path::inside_observer());
  auto prober = std::make_shared<reentry_prober>();
  launch_observation watching{prober};
  launch_path::notify_launch("a_kernel");
  EXPECT_FALSE(launch_path::inside_observer());
}

// on_watched_change

std::atomic<int> changes{0};
std::atomic<bool> watched_when_told{false};

void count_change() noexcept {
  changes.fetch_add(1);
  watched_when_told.store(launch_path::watched());
}

/// Installs count_change for one test and takes it away after.
struct listening {
  listening() {
    changes.store(0);
    launch_path::on_watched_change(&count_change);
  }
  ~listening() { launch_path::on_watched_change(nullptr); }
  listening(const listening&) = delete;
  listening& operator=(const listening&) = delete;
};

TEST(LaunchSources, TheWatchListenerIsToldWhenAnObservationIsInstalledAndWhenItIsDropped) {
  listening listener;
  {
    launch_observation watching{std::make_shared<recording_observer>()};
    EXPECT_EQ(changes.load(), 1);
    EXPECT_TRUE(watched_when_told.load());
  }
  EXPECT_EQ(changes.load(), 2);
  EXPECT_FALSE(watched_when_told.load());
}

TEST(LaunchSources, TheWatchListenerIsNotToldWhenASecondObservationChangesNothingWatched) {
  listening listener;
  launch_observation first{std::make_shared<recording_observer>()};
  { launch_observation second{std::make_shared<recording_observer>()}; }
  EXPECT_EQ(changes.load(), 1);
}

TEST(LaunchSources, ARemovedWatchListenerIsNotTold) {
  { listening listener; }
  launch_observation watching{std::make_shared<recording_observer>()};
  EXPECT_EQ(changes.load(), 0);
}

// reported_here

TEST(LaunchSources, OutsideAReportedHereGuardALaunchIsNotReportedHere) {
  EXPECT_FALSE(launch_path::reported_here_now());
}

TEST(LaunchSources, InsideAReportedHereGuardALaunchIsReportedHereUntilTheGuardEnds) {
  {
    launch_path::reported_here guard;
    EXPECT_TRUE(launch_path::reported_here_now());
  }
  EXPECT_FALSE(launch_path::reported_here_now());
}

TEST(LaunchSources, ANestedReportedHereGuardPutsBackTheOuterOnesMark) {
  launch_path::reported_here outer;
  { launch_path::reported_here inner; }
  EXPECT_TRUE(launch_path::reported_here_now());
}

TEST(LaunchSources, AReportedHereGuardMarksOnlyItsOwnThread) {
  launch_path::reported_here guard;
  bool elsewhere = true;
  std::thread{[&] { elsewhere = launch_path::reported_here_now(); }}.join();
  EXPECT_FALSE(elsewhere);
}

// launch_observation::is_installed

TEST(LaunchSources, AnObserverIsInstalledWhileItsObservationIsTheNewest) {
  auto observer = std::make_shared<recording_observer>();
  launch_observation watching{observer};
  EXPECT_TRUE(launch_observation::is_installed(*observer));
}

TEST(LaunchSources, AnObserverNeverInstalledIsNotInstalled) {
  recording_observer never;
  EXPECT_FALSE(launch_observation::is_installed(never));
  launch_observation watching{std::make_shared<recording_observer>()};
  EXPECT_FALSE(launch_observation::is_installed(never));
}

TEST(LaunchSources, AnObserverShadowedByANewerObservationIsNotInstalledUntilThatOneIsDropped) {
  auto below = std::make_shared<recording_observer>();
  launch_observation watching{below};
  {
    launch_observation above{std::make_shared<recording_observer>()};
    EXPECT_FALSE(launch_observation::is_installed(*below));
  }
  EXPECT_TRUE(launch_observation::is_installed(*below));
}

TEST(LaunchSources, AnObserverIsNotInstalledOnceItsObservationEnded) {
  auto observer = std::make_shared<recording_observer>();
  { launch_observation watching{observer}; }
  EXPECT_FALSE(launch_observation::is_installed(*observer));
}

}  // namespace
}  // namespace launchwatch
