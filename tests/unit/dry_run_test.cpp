// Dry runs as the core sees them: who is told, and which launches are skipped.

#include <launchwatch/dry_run.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

namespace launchwatch {
namespace {

static_assert(!std::is_copy_constructible_v<dry_run_scope> && !std::is_move_constructible_v<dry_run_scope>);
static_assert(!std::is_copy_constructible_v<real_run_scope> &&
              !std::is_move_constructible_v<real_run_scope>);

TEST(DryRun, IsOffUnlessAScopeTurnsItOn) {
  EXPECT_FALSE(dry_run());
  EXPECT_EQ(current_launch_mode(), launch_mode::execute);
}

TEST(DryRun, NestsUntilTheOutermostScopeEnds) {
  {
    dry_run_scope outer;
    {
      dry_run_scope inner;
      EXPECT_TRUE(dry_run());
    }
    EXPECT_TRUE(dry_run()) << "the outer scope still holds";
    EXPECT_EQ(current_launch_mode(), launch_mode::skip);
  }
  EXPECT_FALSE(dry_run());
}

TEST(DryRun, CoversEveryThreadOfTheProcess) {
  dry_run_scope dry;
  bool other_thread_dry = false;
  std::thread{[&] { other_thread_dry = dry_run(); }}.join();
  EXPECT_TRUE(other_thread_dry);
}

TEST(DryRun, ARealRunScopeMakesOnlyItsOwnThreadExecute) {
  dry_run_scope dry;
  real_run_scope real;
  EXPECT_FALSE(dry_run());
  EXPECT_EQ(current_launch_mode(), launch_mode::execute);
  bool other_thread_dry = false;
  std::thread{[&] { other_thread_dry = dry_run(); }}.join();
  EXPECT_TRUE(other_thread_dry);
}

// 12. Under a dry run every launch is still reported, and dry_run() tells the observer.
TEST(DryRun, AnObserverIsStillToldOfADryLaunchAndCanTellItIsDry) {
  // Bespoke: the point is what dry_run() answers from inside the callback.
  struct dry_aware : launch_observer {
    std::vector<bool> dry;
    void launched(std::string_view) override { dry.push_back(dry_run()); }
  };
  auto observer = std::make_shared<dry_aware>();
  launch_observation watching{observer};
  launch_path::notify_launch("real");
  {
    dry_run_scope dry;
    launch_path::notify_launch("dry");
  }
  EXPECT_EQ(observer->dry, (std::vector<bool>{false, true}));
}

}  // namespace
}  // namespace launchwatch
