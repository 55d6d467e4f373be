// Attributing allocates nothing per launch once its storage has grown: a second pass of the same
// size, or a pass within what was reserved, allocates nothing at all. This binary replaces the
// global allocation functions to count, so it is kept apart from the other tests.

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/launch_path.hpp>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>

#include <gtest/gtest.h>

namespace {
std::atomic<long> allocations{0};
}

void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc{};
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace launchwatch {
namespace {

/// `launches` launches, each under two scopes, each handed a small deferred measurement, the way
/// a runtime's launch path reports them.
void run_pass(int launches) {
  const instant start{};
  for (int i = 0; i < launches; ++i) {
    scope layer{"layer"};
    scope attention{"attention"};
    launch_info info;
    info.kernel = "k";
    info.stream = 1;
    launch_path::notify_launch(info);
    launch_path::notify_profiled(
        "k", profile_duration{[start, i]() noexcept -> std::optional<profile_ticks> {
                                return profile_ticks::from_start_end(start, start + std::chrono::nanoseconds{i});
                              },
                              timing_method::device});
  }
}

long allocations_during(int launches) {
  const auto before = allocations.load();
  run_pass(launches);
  return allocations.load() - before;
}

TEST(AttributionAllocation, ASecondPassOfTheSameSizeAllocatesNothing) {
  auto observer = std::make_shared<attribution>();
  launch_observation watching{observer};
  run_pass(3000);
  ASSERT_EQ(observer->collect().launches.size(), 3000u);
  EXPECT_EQ(allocations_during(3000), 0);
  EXPECT_EQ(observer->collect().launches.size(), 3000u);
}

TEST(AttributionAllocation, AFirstPassAllocatesPerChunkNotPerLaunch) {
  auto observer = std::make_shared<attribution>();
  launch_observation watching{observer};
  run_pass(1);  // this thread's log and the interned scope names
  // Three records a launch (the launch, two scope intervals) in chunks of 256, two allocations a
  // chunk: about 240. One a launch would be 10000 or more.
  EXPECT_LT(allocations_during(10000), 10000 / 20);
}

TEST(AttributionAllocation, AReservedPassAllocatesNothing) {
  attribution_options options;
  options.reserve_launches = 5000;
  options.reserve_scopes = 10000;
  auto observer = std::make_shared<attribution>(options);
  launch_observation watching{observer};
  run_pass(1);  // this thread's log and the interned scope names
  EXPECT_EQ(allocations_during(4000), 0);
}

TEST(ScopeAllocation, WithNoAttributionAScopeAllocatesNothing) {
  const auto before = allocations.load();
  for (int i = 0; i < 1000; ++i) {
    scope s{"unobserved"};
  }
  EXPECT_EQ(allocations.load() - before, 0);
}

}  // namespace
}  // namespace launchwatch
