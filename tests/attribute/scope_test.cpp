// Scopes: paths per thread, paired with launches, recorded only while an attribution lives.

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/launch_path.hpp>

#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_clock.hpp"
#include "launch_paths.hpp"
#include "attribute/scope_paths.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using testing::fake_clock;
using testing::launch;
using testing::launch_paths;

static_assert(!std::is_copy_constructible_v<scope>);
static_assert(!std::is_move_constructible_v<scope>);
static_assert(!std::is_copy_assignable_v<scope>);
static_assert(!std::is_move_assignable_v<scope>);

TEST(Scope, WithNoAttributionAliveAScopeIsNotEntered) {
  ASSERT_FALSE(detail::attributing.load());
  scope outer{"outer"};
  scope inner{"inner"};
  EXPECT_EQ(detail::open_scope_depth(), 0u);
  EXPECT_EQ(detail::current_path(), detail::no_path);
}

TEST(Scope, AThreadEnteringTheScopesOfAModelsStepAgainFindsThemWithoutTheSharedTable) {
  // A model's step enters a few hundred (parent, name) pairs in turn, forward and backward.
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i) names.push_back("module " + std::to_string(i));
  std::size_t first_step = 0, second_step = 0;
  std::thread{[&] {  // a thread of its own, so its cache starts empty
    const detail::path_id model = detail::intern_path(detail::no_path, "ResNet");
    const std::size_t before = detail::intern_cache_misses();
    for (const auto& name : names) (void)detail::intern_path(model, name);
    first_step = detail::intern_cache_misses() - before;
    for (const auto& name : names) (void)detail::intern_path(model, name);
    second_step = detail::intern_cache_misses() - before - first_step;
  }}
      .join();
  EXPECT_EQ(first_step, names.size());
  EXPECT_LE(second_step, 16u);  // 64 entries held at most 64 of the 200
}

TEST(Scope, AThreadEnteringScopesNamedInOneReusedBufferAgainFindsThemWithoutTheSharedTable) {
  // Names built at run time in a loop, each in the same buffer, as a short std::string's own
  // storage is at every turn of the loop.
  std::size_t first_step = 0, second_step = 0;
  std::thread{[&] {
    const detail::path_id model = detail::intern_path(detail::no_path, "Transformer");
    char buffer[32];
    const auto enter_layers = [&] {
      for (int layer = 0; layer < 48; ++layer) {
        const int size = std::snprintf(buffer, sizeof buffer, "layer %d", layer);
        (void)detail::intern_path(model, std::string_view{buffer, static_cast<std::size_t>(size)});
      }
    };
    const std::size_t before = detail::intern_cache_misses();
    enter_layers();
    first_step = detail::intern_cache_misses() - before;
    enter_layers();
    second_step = detail::intern_cache_misses() - before - first_step;
  }}.join();
  EXPECT_EQ(first_step, 48u);
  EXPECT_LE(second_step, 8u);  // keyed by the buffer's address, one set's 8 ways held 8 of the 48
}

TEST(Scope, NestsIntoThePathALaunchIsPairedWith) {
  const auto pass = attribute_pass([] {
    scope model{"model"};
    scope layer{"layer 0"};
    launch("k");
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("model/layer 0"));
}

TEST(Scope, LeavingOneRestoresTheEnclosingPath) {
  const auto pass = attribute_pass([] {
    scope model{"model"};
    {
      scope attention{"attention"};
      launch("inside");
    }
    launch("after");
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("model/attention", "model"));
}

TEST(Scope, ALaunchOutsideAnyScopeHasNoScope) {
  const auto pass = attribute_pass([] { launch("bare"); });
  ASSERT_EQ(pass.launches.size(), 1u);
  EXPECT_FALSE(pass.launches[0].scope.has_value());
}

TEST(Scope, TheSameNameUnderDifferentParentsIsADifferentScope) {
  const auto pass = attribute_pass([] {
    {
      scope a{"encoder"};
      scope x{"attention"};
      launch("k");
    }
    {
      scope b{"decoder"};
      scope x{"attention"};
      launch("k");
    }
  });
  ASSERT_EQ(pass.launches.size(), 2u);
  EXPECT_NE(pass.launches[0].scope, pass.launches[1].scope);
  EXPECT_THAT(launch_paths(pass), ElementsAre("encoder/attention", "decoder/attention"));
}

TEST(Scope, ANameBuiltAtRunTimeIsCopied) {
  const auto pass = attribute_pass([] {
    for (int layer = 0; layer < 2; ++layer) {
      std::string name = "layer " + std::to_string(layer);
      scope s{name};
      name.assign("overwritten");  // the scope must not be reading the caller's buffer
      launch("k");
    }
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("layer 0", "layer 1"));
}

TEST(Scope, RecordsItsIntervalOnTheAttributionsClock) {
  attribution_options options;
  options.clock = &fake_clock::now;
  fake_clock::set(1000ns);
  auto observer = std::make_shared<attribution>(options);
  {
    fake_clock::set(1500ns);
    scope outer{"outer"};
    {
      fake_clock::set(2000ns);
      scope inner{"inner"};
      fake_clock::set(2500ns);
    }
    fake_clock::set(3000ns);
  }
  const auto pass = observer->collect();
  ASSERT_EQ(pass.threads.size(), 1u);
  const auto& scopes = pass.threads[0].scopes;
  ASSERT_EQ(scopes.size(), 2u);
  EXPECT_EQ(pass.scope_path_text(scopes[0].scope), "outer/inner");
  EXPECT_EQ(scopes[0].start, fake_clock::at(2000ns));
  EXPECT_EQ(scopes[0].end, fake_clock::at(2500ns));
  EXPECT_EQ(pass.scope_path_text(scopes[1].scope), "outer");
  EXPECT_EQ(scopes[1].start, fake_clock::at(1500ns));
  EXPECT_EQ(scopes[1].end, fake_clock::at(3000ns));
  EXPECT_EQ(pass.origin, fake_clock::at(1000ns));
}

TEST(Scope, AScopeEnteredBeforeTheAttributionIsNotInThePath) {
  scope before{"before"};
  const auto pass = attribute_pass([] {
    scope during{"during"};
    launch("k");
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("during"));
}

TEST(Scope, AScopeLeftFirstEndsTheScopesStillOpenInsideIt) {
  auto observer = std::make_shared<attribution>();
  std::optional<scope> outer{std::in_place, "outer"};
  std::optional<scope> inner{std::in_place, "inner"};
  EXPECT_EQ(detail::open_scope_depth(), 2u);
  outer.reset();
  EXPECT_EQ(detail::open_scope_depth(), 0u);
  {
    scope again{"again"};
    scope later{"later"};  // takes the frame `inner` had
    inner.reset();         // must not pop `later`
    EXPECT_EQ(detail::open_scope_depth(), 2u);
  }
  EXPECT_EQ(detail::open_scope_depth(), 0u);
  const auto pass = observer->collect();
  ASSERT_EQ(pass.threads.size(), 1u);
  std::vector<std::string> ended;
  for (const auto& s : pass.threads[0].scopes) ended.push_back(pass.scope_path_text(s.scope));
  EXPECT_THAT(ended, ElementsAre("outer/inner", "outer", "again/later", "again"));
  // inner ended with outer, so the two intervals still nest
  EXPECT_EQ(pass.threads[0].scopes[0].end, pass.threads[0].scopes[1].end);
}

TEST(Scope, EachThreadHasItsOwnPath) {
  const auto pass = attribute_pass([] {
    scope main_scope{"main"};
    std::thread other{[] {
      scope worker{"worker"};
      launch("on worker");
    }};
    other.join();
    launch("on main");
  });
  ASSERT_EQ(pass.launches.size(), 2u);
  for (const auto& l : pass.launches) {
    const auto kernel = pass.kernels[l.kernel];
    EXPECT_EQ(pass.scope_path_text(*l.scope), kernel == "on worker" ? "worker" : "main") << kernel;
  }
  EXPECT_NE(pass.launches[0].thread, pass.launches[1].thread);
}

TEST(Scope, AScopeEnteredUnderAnotherThreadsPathNestsBelowThatPathAndTakesItsOwnInnerScopes) {
  const auto pass = attribute_pass([] {
    scope step{"step"};
    scope backward{"backward"};
    const detail::path_id caller = detail::current_path();
    std::thread autograd{[caller] {
      const auto token = detail::enter_scope_under(caller, "ResNet");
      {
        scope fc{"fc"};
        launch("fc backward");
      }
      launch("ResNet backward");
      detail::leave_scope(token);
    }};
    autograd.join();
    launch("on caller");
  });
  EXPECT_THAT(launch_paths(pass),
              ElementsAre("step/backward/ResNet/fc", "step/backward/ResNet", "step/backward"));
}

TEST(Scope, LeavingAScopeEnteredUnderAnotherThreadsPathLeavesTheThreadOutsideAnyScope) {
  const auto pass = attribute_pass([] {
    scope backward{"backward"};
    const detail::path_id caller = detail::current_path();
    std::thread autograd{[caller] {
      detail::leave_scope(detail::enter_scope_under(caller, "ResNet"));
      EXPECT_EQ(detail::open_scope_depth(), 0u);
      launch("after");
    }};
    autograd.join();
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre(""));
}

TEST(Scope, AScopeEnteredUnderNoPathIsARootScope) {
  const auto pass = attribute_pass([] {
    scope outer{"outer"};
    const auto token = detail::enter_scope_under(detail::no_path, "root");
    launch("k");
    detail::leave_scope(token);
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre("root"));
}

TEST(Scope, WithNoAttributionAliveAScopeUnderAnotherPathIsNotEntered) {
  const auto token = detail::enter_scope_under(detail::no_path, "root");
  EXPECT_EQ(token.serial, 0u);
  EXPECT_EQ(detail::open_scope_depth(), 0u);
}

attribution_options sole_scoped_thread() {
  attribution_options options;
  options.unscoped = unscoped_launches::sole_scoped_thread;
  return options;
}

/// Runs `fn` on a thread of its own with no scope open, and waits for it.
template <class F>
void on_unscoped_thread(F fn) {
  std::thread helper{fn};
  helper.join();
}

TEST(Scope, ByDefaultALaunchFromAThreadWithNoScopeIsOutsideWhileAnotherThreadIsInOne) {
  const auto pass = attribute_pass([] {
    scope backward{"backward"};
    on_unscoped_thread([] { launch("autograd kernel"); });
  });
  EXPECT_THAT(launch_paths(pass), ElementsAre(""));
}

TEST(Scope, WithSoleScopedThreadALaunchFromAThreadWithNoScopeGoesToTheOnlyThreadInAScope) {
  const auto pass = attribute_pass(
      [] {
        scope step{"step"};
        scope backward{"backward"};
        on_unscoped_thread([] { launch("autograd kernel"); });
      },
      sole_scoped_thread());
  EXPECT_THAT(launch_paths(pass), ElementsAre("step/backward"));
}

TEST(Scope, WithSoleScopedThreadTheLaunchFollowsThatThreadsPathAsItChanges) {
  const auto pass = attribute_pass(
      [] {
        scope step{"step"};
        {
          scope forward{"forward"};
          on_unscoped_thread([] { launch("first"); });
        }
        on_unscoped_thread([] { launch("second"); });
      },
      sole_scoped_thread());
  EXPECT_THAT(launch_paths(pass), ElementsAre("step/forward", "step"));
}

TEST(Scope, WithSoleScopedThreadALaunchStaysOutsideWhileTwoThreadsAreInScopes) {
  const auto pass = attribute_pass(
      [] {
        scope mine{"main"};
        std::promise<void> entered;
        std::promise<void> launched;
        std::thread worker{[&] {
          scope theirs{"worker"};
          entered.set_value();
          launched.get_future().wait();
        }};
        entered.get_future().wait();
        on_unscoped_thread([] { launch("whose?"); });
        launched.set_value();
        worker.join();
      },
      sole_scoped_thread());
  EXPECT_THAT(launch_paths(pass), ElementsAre(""));
}

TEST(Scope, WithSoleScopedThreadALaunchStaysOutsideOnceTheScopedThreadLeftItsLastScope) {
  const auto pass = attribute_pass(
      [] {
        { scope done{"done"}; }
        on_unscoped_thread([] { launch("after"); });
      },
      sole_scoped_thread());
  EXPECT_THAT(launch_paths(pass), ElementsAre(""));
}

TEST(Scope, WithSoleScopedThreadAThreadInAScopeKeepsItsOwnPath) {
  const auto pass = attribute_pass(
      [] {
        scope mine{"main"};
        on_unscoped_thread([] {
          scope own{"own"};
          launch("k");
        });
      },
      sole_scoped_thread());
  EXPECT_THAT(launch_paths(pass), ElementsAre("own"));
}

TEST(Scope, ThreadsAreListedForTheSoleScopedThreadOnlyWhileAnAttributionAsksForIt) {
  {
    auto plain = std::make_shared<attribution>();
    scope mine{"mine"};
    EXPECT_EQ(detail::sole_scoped_thread_path(), detail::no_path) << "listed with nobody asking";
  }
  auto asking = std::make_shared<attribution>(sole_scoped_thread());
  scope mine{"mine"};
  EXPECT_NE(detail::sole_scoped_thread_path(), detail::no_path);
}

TEST(Scope, StopsBeingEnteredWhenTheLastAttributionEnds) {
  {
    auto first = std::make_shared<attribution>();
    {
      auto second = std::make_shared<attribution>();
    }
    EXPECT_TRUE(detail::attributing.load());
    scope s{"while one lives"};
    EXPECT_EQ(detail::open_scope_depth(), 1u);
  }
  EXPECT_FALSE(detail::attributing.load());
  scope after{"after"};
  EXPECT_EQ(detail::open_scope_depth(), 0u);
}

TEST(Scope, IntervalsGoToTheNewestLiveAttribution) {
  auto older = std::make_shared<attribution>();
  auto newer = std::make_shared<attribution>();
  { scope s{"seen by the newer one"}; }
  EXPECT_TRUE(older->collect().threads.empty());
  const auto pass = newer->collect();
  ASSERT_EQ(pass.threads.size(), 1u);
  EXPECT_EQ(pass.threads[0].scopes.size(), 1u);
}

}  // namespace
}  // namespace launchwatch
