// The shader clock's calibration on the CPU, fed made-up probes: NVIDIA's clock (the nanosecond
// global timer, counted from the Unix epoch), a clock of 10 ns a tick, a drifting one, and Mesa
// lavapipe's narrow clock (the low 32 bits of CLOCK_MONOTONIC); the grid overhead each window is
// widened by, and what bounds the widening.
#include <chrono>
#include <cstdint>
#include <functional>

#include <gtest/gtest.h>

#include "backend/vulkan/clock_calibration.hpp"
#include "runtime/stream_read_order.hpp"

namespace {

using launchwatch::instant;
using launchwatch::profile_ticks;
using launchwatch::detail::vulkan::clock_calibration;
using launchwatch::detail::vulkan::clock_record;
using namespace std::chrono_literals;

constexpr std::int64_t second = 1'000'000'000;
constexpr std::uint64_t nvidia_epoch = 1796109619123456789ull;  // 2026-12-01, as measured

/// A device whose shader clock reads `clock(host_ns)`.
struct fake_device {
  std::function<std::uint64_t(std::int64_t)> clock;
  /// A probe whose timestamps are `width` ns apart, with the shader's reading `front` ns after the
  /// first (half the width unless said).
  clock_calibration::probe probe(std::int64_t at, std::int64_t width = 2000,
                                 std::int64_t front = -1) const {
    const std::uint64_t reading = clock(at + (front < 0 ? width / 2 : front));
    return clock_calibration::probe{at, at + width, reading, reading};
  }
};

instant at_ns(std::int64_t ns) {
  return instant{std::chrono::nanoseconds{ns}};
}

/// A collected record (not copyable: its state is atomic), as the stream's read-back leaves it.
struct collected {
  clock_record record;
  collected(std::uint64_t start, std::uint64_t end, std::int64_t submitted_ns) {
    record.start = start;
    record.end = end;
    record.submitted = at_ns(submitted_ns);
    record.state = clock_record::collected;
  }
  operator const clock_record&() const { return record; }
};

/// The first two probes, 20 ms apart, from `at`.
void calibrate(clock_calibration& calibration, const fake_device& device, std::int64_t at) {
  calibration.add(device.probe(at));
  EXPECT_FALSE(calibration.ready()) << "one probe gives no rate";
  calibration.add(device.probe(at + 20'000'000));
  ASSERT_TRUE(calibration.ready());
}

TEST(ClockCalibration, TwoProbesPlaceNvidiasGlobalTimerOnTheHostToTheNanosecond) {
  const std::int64_t host0 = 1000 * second;
  const fake_device nvidia{
      [&](std::int64_t host) { return nvidia_epoch + static_cast<std::uint64_t>(host - host0); }};
  clock_calibration calibration{false};
  calibrate(calibration, nvidia, host0 + 5 * second);
  EXPECT_EQ(calibration.ns_per_tick(), 1.0);
  // Kernels of 100, 200, 300, 1000 and 1100 ns (review-2026-12-01b finding 12's lengths).
  const std::int64_t started = host0 + 6 * second;
  for (const std::int64_t length : {100, 200, 300, 1000, 1100}) {
    const profile_ticks window = calibration.window(
        collected(nvidia.clock(started), nvidia.clock(started + length), started - 1000), 0ns);
    EXPECT_EQ(window.start(), at_ns(started)) << length;
    EXPECT_EQ(window.length(), std::chrono::nanoseconds{length});
  }
}

TEST(ClockCalibration, AClockOfTenNanosecondsATickIsMeasuredAsSuch) {
  const std::int64_t host0 = 50 * second;
  const fake_device amd_like{
      [&](std::int64_t host) { return static_cast<std::uint64_t>((host - host0) / 10); }};
  clock_calibration calibration{false};
  calibrate(calibration, amd_like, host0 + second);
  EXPECT_NEAR(calibration.ns_per_tick(), 10.0, 0.01);
  const std::int64_t started = host0 + 2 * second;
  const profile_ticks window = calibration.window(
      collected(amd_like.clock(started), amd_like.clock(started) + 5000, started - 1000), 0ns);
  EXPECT_NEAR(static_cast<double>(window.length().count()), 50'000.0, 50.0);
  EXPECT_NEAR(static_cast<double>((window.start() - at_ns(started)).count()), 0.0, 100.0);
}

TEST(ClockCalibration, AFirstRateWithinOnePercentOfANanosecondATickIsExactlyOne) {
  const std::int64_t host0 = 50 * second;
  const fake_device nanoseconds{
      [&](std::int64_t host) { return static_cast<std::uint64_t>(host - host0); }};
  clock_calibration calibration{false};
  // Lopsided brackets: the first reading late in its bracket, the second early, so the two anchors
  // are 4 µs off in opposite directions over 20 ms (a rate 0.02% off).
  calibration.add(nanoseconds.probe(host0 + second, 10'000, 9'000));
  calibration.add(nanoseconds.probe(host0 + second + 20'000'000, 10'000, 1'000));
  ASSERT_TRUE(calibration.ready());
  EXPECT_EQ(calibration.ns_per_tick(), 1.0);
}

TEST(ClockCalibration, AFirstRateTooUncertainToTellFromANanosecondATickIsExactlyOne) {
  const fake_device nanoseconds{[](std::int64_t host) { return static_cast<std::uint64_t>(host); }};
  clock_calibration calibration{true};
  // Lavapipe on a busy machine: brackets of 3 ms, the readings at opposite ends of them, so the
  // two anchors 20 ms apart give a rate 15% off, within what their widths leave uncertain.
  calibration.add(nanoseconds.probe(10 * second, 3'000'000, 0));
  calibration.add(nanoseconds.probe(10 * second + 20'000'000, 3'000'000, 3'000'000));
  ASSERT_TRUE(calibration.ready());
  EXPECT_EQ(calibration.ns_per_tick(), 1.0);
}

TEST(ClockCalibration, AProbeFarWiderThanTheNarrowestRecentOneDoesNotMoveTheMapping) {
  const fake_device nanoseconds{[](std::int64_t host) { return static_cast<std::uint64_t>(host); }};
  clock_calibration calibration{false};
  calibrate(calibration, nanoseconds, 10 * second);
  // Its queue thread descheduled for 5 ms: read at the start of its bracket, whose middle is 2.5 ms
  // later.
  calibration.add(nanoseconds.probe(11 * second, 5'000'000, 0));
  const std::int64_t started = 12 * second;
  const profile_ticks window = calibration.window(
      collected(nanoseconds.clock(started), nanoseconds.clock(started + 100), started - 1000), 0ns);
  EXPECT_EQ(window.start(), at_ns(started));
}

TEST(ClockCalibration, ALaterRateIsNotTakenFromAnchorsTooUncertainForIt) {
  const std::int64_t host0 = 50 * second;
  const fake_device drifting{[&](std::int64_t host) {
    return static_cast<std::uint64_t>(static_cast<double>(host - host0) * 1.000006);
  }};
  clock_calibration calibration{false};
  // Probes 100 µs wide, 0.6 s apart: the rate between them is uncertain by 1.7e-4.
  calibration.add(drifting.probe(host0 + second, 100'000));
  calibration.add(drifting.probe(host0 + second + 20'000'000, 100'000));
  ASSERT_TRUE(calibration.ready());
  calibration.add(drifting.probe(host0 + second + 620'000'000, 100'000));
  EXPECT_EQ(calibration.ns_per_tick(), 1.0);
}

TEST(ClockCalibration, AnchorsHalfASecondApartMeasureADriftingClocksRate) {
  const std::int64_t host0 = 50 * second;
  // 6 ppm fast, as NVIDIA's global timer runs against CLOCK_MONOTONIC (research/vulkan.md).
  const fake_device drifting{[&](std::int64_t host) {
    return static_cast<std::uint64_t>(static_cast<double>(host - host0) * 1.000006);
  }};
  clock_calibration calibration{false};
  calibrate(calibration, drifting, host0 + second);
  EXPECT_EQ(calibration.ns_per_tick(), 1.0) << "6 ppm is within the first rate's 1%";
  calibration.add(drifting.probe(host0 + 2 * second));
  EXPECT_NEAR(calibration.ns_per_tick(), 1.0 / 1.000006, 1e-8);
  // A 50 µs kernel two seconds on is within a nanosecond.
  const std::int64_t started = host0 + 4 * second;
  const profile_ticks window = calibration.window(
      collected(drifting.clock(started), drifting.clock(started + 50'000), started - 1000), 0ns);
  EXPECT_NEAR(static_cast<double>(window.length().count()), 50'000.0, 1.0);
  EXPECT_NEAR(static_cast<double>((window.start() - at_ns(started)).count()), 0.0, 2.0);
}

TEST(ClockCalibration,
     TheGridOverheadIsTheLowerQuartileOfWhatTheProbesTimestampsSawBeyondTheShader) {
  const fake_device nanoseconds{[](std::int64_t host) { return static_cast<std::uint64_t>(host); }};
  clock_calibration calibration{false};
  EXPECT_EQ(calibration.overhead(), 0ns);
  std::int64_t at = 10 * second;
  for (const std::int64_t width : {2100, 1900, 2000, 2200, 1800, 90'000, 2050, 1950, 2150}) {
    calibration.add(nanoseconds.probe(at, width));
    at += 100'000'000;
  }
  // Sorted: 1800 1900 1950 [2000] 2050 2100 2150 2200 90000; the lower quartile is the third.
  EXPECT_EQ(calibration.overhead(), 1950ns);
}

TEST(ClockCalibration, TheWideningNeverReachesBackPastTheLaunchsSubmission) {
  const fake_device nanoseconds{[](std::int64_t host) { return static_cast<std::uint64_t>(host); }};
  clock_calibration calibration{false};
  calibrate(calibration, nanoseconds, 10 * second);
  const std::int64_t started = 11 * second;
  const profile_ticks window =
      calibration.window(collected(started, started + 5000, started - 700), 2000ns);
  EXPECT_EQ(window.start(), at_ns(started - 700));
  EXPECT_EQ(window.end(), at_ns(started + 5000));
}

TEST(ClockCalibration, AWindowIsWidenedAtItsStartButNeverBackPastThePreviousWindowsEnd) {
  const fake_device nanoseconds{[](std::int64_t host) { return static_cast<std::uint64_t>(host); }};
  clock_calibration calibration{false};
  calibrate(calibration, nanoseconds, 10 * second);
  const std::int64_t started = 11 * second;
  const collected alone{static_cast<std::uint64_t>(started),
                        static_cast<std::uint64_t>(started + 5000), started - 10'000};
  profile_ticks window = calibration.window(alone, 2000ns);
  EXPECT_EQ(window.start(), at_ns(started - 2000));
  EXPECT_EQ(window.end(), at_ns(started + 5000));
  // The previous kernel on the stream ended 300 ns before this one started.
  collected after{static_cast<std::uint64_t>(started), static_cast<std::uint64_t>(started + 5000),
                  started - 10'000};
  after.record.has_previous = true;
  after.record.previous_end = static_cast<std::uint64_t>(started - 300);
  window = calibration.window(after, 2000ns);
  EXPECT_EQ(window.start(), at_ns(started - 300));
  EXPECT_EQ(window.end(), at_ns(started + 5000));
}

TEST(ClockCalibration, AWindowMappedBeforeItsSubmissionIsMovedWholeToStartThere) {
  const fake_device nanoseconds{[](std::int64_t host) { return static_cast<std::uint64_t>(host); }};
  clock_calibration calibration{false};
  calibrate(calibration, nanoseconds, 10 * second);
  const std::int64_t started = 11 * second;
  const profile_ticks window =
      calibration.window(collected(started, started + 5000, started + 1000), 0ns);
  EXPECT_EQ(window.start(), at_ns(started + 1000));
  EXPECT_EQ(window.length(), 5000ns);
}

/// A stream's two back-to-back 50 us kernels, 1 us apart, read with a probe between the reads whose
/// anchor places the clock 30 us earlier than the anchors before it (within what a loaded CPU
/// device's probes are uncertain by), as the shader clock's re-anchoring does.
struct read_across_a_new_anchor {
  const fake_device nanoseconds{[](std::int64_t host) { return static_cast<std::uint64_t>(host); }};
  clock_calibration calibration{false};
  static constexpr std::int64_t started = 11 * second;
  collected first{static_cast<std::uint64_t>(started), static_cast<std::uint64_t>(started + 50'000),
                  started - 10'000};
  collected second_one{static_cast<std::uint64_t>(started + 51'000),
                       static_cast<std::uint64_t>(started + 101'000), started - 9'000};

  read_across_a_new_anchor() {
    calibrate(calibration, nanoseconds, 10 * second);
    second_one.record.has_previous = true;
    second_one.record.previous_end = first.record.end;
  }
  /// The new anchor: its shader read the clock 30 us later than its timestamps say.
  void anchor_again() {
    const std::int64_t at = started + 200'000;
    const std::uint64_t reading = nanoseconds.clock(at + 1000) + 30'000;
    calibration.add(clock_calibration::probe{at, at + 2000, reading, reading});
  }
};

TEST(ClockCalibration, AWindowReadAfterANewAnchorIsPlacedAfterItsStreamsPreviousWindowAsHandedOut) {
  read_across_a_new_anchor stream;
  launchwatch::detail::stream_read_order order;
  const profile_ticks first = launchwatch::detail::place_in_stream_order(
      order, 1, stream.calibration.window(stream.first, 2000ns), stream.first.record.submitted);
  EXPECT_EQ(first.end(), at_ns(read_across_a_new_anchor::started + 50'000));
  stream.anchor_again();
  // Through the new anchor alone (not widened), the second kernel is placed before the first
  // ended: the case vulkan_stream's place_read is for.
  const profile_ticks by_mapping = stream.calibration.window(stream.second_one, 0ns);
  ASSERT_LT(by_mapping.start(), first.end());
  const profile_ticks second_one = launchwatch::detail::place_in_stream_order(
      order, 2, stream.calibration.window(stream.second_one, 0ns),
      stream.second_one.record.submitted);
  EXPECT_EQ(second_one.start(), first.end());
  EXPECT_EQ(second_one.length(), by_mapping.length()) << "moved whole: the shader's length";
}

TEST(ClockCalibration, ANarrowClocksStampsAreUnwrappedNearTheirLaunchesSubmission) {
  // Lavapipe: CLOCK_MONOTONIC nanoseconds, low 32 bits only (a wrap every 4.29 s).
  const fake_device lavapipe{
      [](std::int64_t host) { return static_cast<std::uint64_t>(host) & 0xFFFF'FFFFull; }};
  clock_calibration calibration{true};
  calibrate(calibration, lavapipe, 100 * second);
  for (const std::int64_t started : {100 * second + 500'000'000, 107 * second, 160 * second}) {
    // A kernel that starts 2 ms after its submission, and one 2.5 s after it.
    for (const std::int64_t delay : {2'000'000ll, 2'500'000'000ll}) {
      const std::int64_t submitted = started - delay;
      const profile_ticks window = calibration.window(
          collected(lavapipe.clock(started), lavapipe.clock(started + 7000), submitted), 0ns);
      EXPECT_EQ(window.start(), at_ns(started)) << started << " after " << delay;
      EXPECT_EQ(window.length(), 7000ns);
    }
  }
}

TEST(ClockCalibration, ANarrowClocksWindowAcrossItsWrapKeepsItsLength) {
  const fake_device lavapipe{
      [](std::int64_t host) { return static_cast<std::uint64_t>(host) & 0xFFFF'FFFFull; }};
  clock_calibration calibration{true};
  calibrate(calibration, lavapipe, 100 * second);
  // The first host nanosecond after 100 s whose low 32 bits are zero, less 256 ns.
  const std::int64_t wrap = (100 * second / (std::int64_t{1} << 32) + 1) * (std::int64_t{1} << 32);
  const std::int64_t started = wrap - 256;
  const profile_ticks window = calibration.window(
      collected(lavapipe.clock(started), lavapipe.clock(started + 512), started - 1000), 0ns);
  EXPECT_EQ(lavapipe.clock(started + 512), 256u) << "the window does cross the wrap";
  EXPECT_EQ(window.start(), at_ns(started));
  EXPECT_EQ(window.length(), 512ns);
}

TEST(ClockCalibration, ANarrowClockStaysPlacedWhenItsNextProbeComesMinutesLater) {
  const fake_device lavapipe{
      [](std::int64_t host) { return static_cast<std::uint64_t>(host) & 0xFFFF'FFFFull; }};
  clock_calibration calibration{true};
  calibrate(calibration, lavapipe, 100 * second);
  calibration.add(lavapipe.probe(400 * second));  // timing resumed five minutes on
  const std::int64_t started = 401 * second;
  const profile_ticks window = calibration.window(
      collected(lavapipe.clock(started), lavapipe.clock(started + 1000), started - 1000), 0ns);
  EXPECT_EQ(window.start(), at_ns(started));
  EXPECT_EQ(window.length(), 1000ns);
  EXPECT_EQ(calibration.ns_per_tick(), 1.0);
}

TEST(ClockCalibration, AnEndStampedBeforeItsStartIsAWindowOfLengthZero) {
  const fake_device nanoseconds{[](std::int64_t host) { return static_cast<std::uint64_t>(host); }};
  clock_calibration calibration{false};
  calibrate(calibration, nanoseconds, 10 * second);
  const std::int64_t started = 11 * second;
  const profile_ticks window =
      calibration.window(collected(started, started - 50, started - 1000), 0ns);
  EXPECT_EQ(window.start(), at_ns(started));
  EXPECT_EQ(window.length(), 0ns);
}

}  // namespace
