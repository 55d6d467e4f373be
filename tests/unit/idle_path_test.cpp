// With nothing installed, a launch's hooks allocate nothing. This binary replaces the global
// allocation functions to count, so it is kept apart from the other tests.

#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <atomic>
#include <cstdlib>
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

// 2. With nothing installed a launch costs one relaxed atomic load: no lock, no allocation, no
// formatting. (The instruction count is checked on the disassembly by bench/idle_path_check.)
TEST(LaunchObservation, WithNothingInstalledALaunchAllocatesNothing) {
  ASSERT_FALSE(launch_path::is_observing());
  const auto before = allocations.load();
  for (int i = 0; i < 1000; ++i) {
    launch_path::notify_launch("idle");
    (void)launch_path::timing_wanted();
  }
  EXPECT_EQ(allocations.load() - before, 0);
}

TEST(LaunchObservation, ANamesOnlyObserverIsToldWithoutAllocatingOnTheLaunchPath) {
  // Bespoke: recording_observer allocates as it records, which this test must not count.
  struct counter : launch_observer {
    long count = 0;
    void launched(std::string_view) override { ++count; }
  };
  auto observer = std::make_shared<counter>();
  launch_observation watching{observer};
  const auto before = allocations.load();
  for (int i = 0; i < 1000; ++i) launch_path::notify_launch("observed");
  EXPECT_EQ(allocations.load() - before, 0);
  EXPECT_EQ(observer->count, 1000);
}

TEST(LaunchObservation, ADeferredMeasurementOfAFewWordsIsHandedOverWithoutAllocating) {
  // Bespoke: it must drop each measurement without allocating, which recording_observer does not.
  struct drops : launch_observer {
    void launched(std::string_view) override {}
    timing_request timing() const override { return timing_request::deferred; }
    void profiled(std::string_view, profile_duration) override {}
  };
  launch_observation watching{std::make_shared<drops>()};
  const auto before = allocations.load();
  for (int i = 0; i < 1000; ++i) {
    launch_path::notify_profiled(
        "k", profile_duration{[slot = static_cast<void*>(nullptr), index = i]()
                                  -> std::optional<profile_ticks> {
                                (void)slot;
                                (void)index;
                                return std::nullopt;
                              },
                              timing_method::device});
  }
  EXPECT_EQ(allocations.load() - before, 0);
}

}  // namespace
}  // namespace launchwatch
