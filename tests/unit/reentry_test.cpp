// 13. Observer methods run under the slot's lock: one that launches, or installs or drops an
// observation, fails loudly instead of deadlocking.

#include <launchwatch/config.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <chrono>
#include <memory>
#include <optional>

#include <gtest/gtest.h>

#include "support/measurements.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

#if LAUNCHWATCH_CHECK_REENTRY

class ReentryDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// The observers here stay bespoke: each one's point is what it does from inside a callback.

TEST_F(ReentryDeathTest, AnObserverThatLaunchesFromACallbackAbortsWithAMessage) {
  struct launches_inside : launch_observer {
    void launched(std::string_view) override { launch_path::notify_launch("nested"); }
  };
  EXPECT_DEATH(
      {
        launch_observation watching{std::make_shared<launches_inside>()};
        launch_path::notify_launch("outer");
      },
      "tried to launch a kernel from inside");
}

TEST_F(ReentryDeathTest, AnObserverThatInstallsFromACallbackAbortsWithAMessage) {
  struct installs_inside : launch_observer {
    void launched(std::string_view) override {
      launch_observation nested{std::make_shared<testing::recording_observer>()};
    }
  };
  EXPECT_DEATH(
      {
        launch_observation watching{std::make_shared<installs_inside>()};
        launch_path::notify_launch("outer");
      },
      "tried to install a launch_observation from inside");
}

TEST_F(ReentryDeathTest, AnObserverThatDropsAnObservationFromACallbackAbortsWithAMessage) {
  struct drops_inside : launch_observer {
    std::optional<launch_observation>* to_drop = nullptr;
    void launched(std::string_view) override { to_drop->reset(); }
  };
  EXPECT_DEATH(
      {
        auto observer = std::make_shared<drops_inside>();
        std::optional<launch_observation> watching;
        observer->to_drop = &watching;
        watching.emplace(observer);
        launch_path::notify_launch("outer");
      },
      "tried to drop a launch_observation from inside");
}

TEST_F(ReentryDeathTest, AnObserverThatAsksForTimingFromACallbackAbortsWithAMessage) {
  struct asks_inside : launch_observer {
    void launched(std::string_view) override { (void)launch_path::timing_wanted(); }
  };
  EXPECT_DEATH(
      {
        launch_observation watching{std::make_shared<asks_inside>()};
        launch_path::notify_launch("outer");
      },
      "tried to ask whether launches are timed from inside");
}

// Fault table row 3: the measurement callbacks run under the slot's lock too.
TEST_F(ReentryDeathTest, AnObserverThatLaunchesFromTimedAbortsWithAMessage) {
  struct launches_inside : launch_observer {
    void launched(std::string_view) override {}
    timing_request timing() const override { return timing_request::resolved; }
    void timed(std::string_view, std::chrono::nanoseconds, timing_method) override {
      launch_path::notify_launch("nested");
    }
  };
  EXPECT_DEATH(
      {
        launch_observation watching{std::make_shared<launches_inside>()};
        launch_path::notify_profiled("outer", testing::measured(std::chrono::microseconds{1}));
      },
      "tried to launch a kernel from inside");
}

TEST_F(ReentryDeathTest, AnObserverThatInstallsFromProfiledAbortsWithAMessage) {
  struct installs_inside : launch_observer {
    void launched(std::string_view) override {}
    timing_request timing() const override { return timing_request::deferred; }
    void profiled(std::string_view, profile_duration) override {
      launch_observation nested{std::make_shared<testing::recording_observer>()};
    }
  };
  EXPECT_DEATH(
      {
        launch_observation watching{std::make_shared<installs_inside>()};
        launch_path::notify_profiled("outer", testing::measured(std::chrono::microseconds{1}));
      },
      "tried to install a launch_observation from inside");
}

#else

TEST(Reentry, IsNotCheckedInThisBuild) { GTEST_SKIP() << "built with LAUNCHWATCH_CHECK_REENTRY=OFF"; }

#endif

}  // namespace
}  // namespace launchwatch
