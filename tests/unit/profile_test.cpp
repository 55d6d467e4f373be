// profile_ticks and profile_duration: windows on one clock, read once.

#include <launchwatch/profile.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include <gtest/gtest.h>

namespace launchwatch {
namespace {

using namespace std::chrono_literals;

static_assert(!std::is_copy_constructible_v<profile_duration>);
static_assert(std::is_nothrow_move_constructible_v<profile_duration>);

TEST(ProfileTicks, KeepsStartAndEndOnOneClock) {
  const instant start{1000ns};
  const auto ticks = profile_ticks::from_start_end(start, start + 250ns);
  EXPECT_EQ(ticks.start(), start);
  EXPECT_EQ(ticks.end(), start + 250ns);
  EXPECT_EQ(ticks.length(), 250ns);
}

TEST(ProfileTicks, ClampsAReversedWindowToZeroLength) {
  const instant start{1000ns};
  const auto ticks = profile_ticks::from_start_end(start, start - 5ns);
  EXPECT_EQ(ticks.length(), 0ns);
  EXPECT_EQ(ticks.end(), start);
}

TEST(ProfileDuration, ASystemTimeMeasurementIsReadWithoutWaiting) {
  const instant start{10us};
  auto profile = profile_duration::from_system_time(start, start + 7us);
  EXPECT_EQ(profile.method(), timing_method::system);
  const auto ticks = std::move(profile).resolve();
  ASSERT_TRUE(ticks);
  EXPECT_EQ(ticks->start(), start);
  EXPECT_EQ(ticks->length(), 7us);
}

TEST(ProfileDuration, IsReadOnceAndASecondReadIsALogicError) {
  int reads = 0;
  profile_duration profile{[&]() -> std::optional<profile_ticks> {
                             ++reads;
                             return profile_ticks::from_start_end(instant{}, instant{1us});
                           },
                           timing_method::device};
  EXPECT_TRUE(profile.readable());
  EXPECT_TRUE(std::move(profile).resolve());
  EXPECT_FALSE(profile.readable());
  EXPECT_THROW((void)std::move(profile).resolve(), std::logic_error);
  EXPECT_EQ(reads, 1);
}

TEST(ProfileDuration, CarriesAMoveOnlyResolverAcrossMoves) {
  auto owned = std::make_unique<int>(42);
  profile_duration profile{[owned = std::move(owned)]() -> std::optional<profile_ticks> {
                             return profile_ticks::from_start_end(instant{},
                                                                  instant{std::chrono::nanoseconds{*owned}});
                           },
                           timing_method::device};
  profile_duration moved = std::move(profile);
  EXPECT_FALSE(profile.readable());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(std::move(moved).resolve()->length(), 42ns);
}

TEST(ProfileDuration, ResolversLargerThanTheInlineBufferStillWork) {
  std::array<std::int64_t, 32> big{};
  big[31] = 99;
  profile_duration profile{[big]() -> std::optional<profile_ticks> {
                             return profile_ticks::from_start_end(instant{},
                                                                  instant{std::chrono::nanoseconds{big[31]}});
                           },
                           timing_method::device};
  profile_duration moved = std::move(profile);
  EXPECT_EQ(std::move(moved).resolve()->length(), 99ns);
}

TEST(ProfileDuration, AnExceptionFromTheReadPropagatesAndConsumesTheMeasurement) {
  profile_duration profile{[]() -> std::optional<profile_ticks> {
                             throw std::runtime_error{"the kernel faulted"};
                           },
                           timing_method::device};
  EXPECT_THROW((void)std::move(profile).resolve(), std::runtime_error);
  EXPECT_FALSE(profile.readable());
}

TEST(ProfileDuration, DestroysAnUnreadResolverExactlyOnce) {
  auto alive = std::make_shared<int>(0);
  {
    profile_duration profile{[keep = alive]() -> std::optional<profile_ticks> { return {}; },
                             timing_method::device};
    EXPECT_EQ(alive.use_count(), 2);
    profile_duration moved = std::move(profile);
    EXPECT_EQ(alive.use_count(), 2);
  }
  EXPECT_EQ(alive.use_count(), 1);
}

}  // namespace
}  // namespace launchwatch

namespace launchwatch {
namespace {

TEST(ProfileTicks, TimingMethodsAreNamedAsReportsSpellThem) {
  EXPECT_EQ(to_string(timing_method::device), "device");
  EXPECT_EQ(to_string(timing_method::system), "system");
}

}  // namespace
}  // namespace launchwatch
