// place_in_stream_order (runtime/stream_read_order.hpp): one stream's device windows, placed on the
// host clock when read, never overlap when read in stream order, and none starts before its
// launch's submission; a window is moved, never shortened.
#include <chrono>

#include <gtest/gtest.h>

#include "runtime/stream_read_order.hpp"

namespace launchwatch::detail {
namespace {

using namespace std::chrono_literals;

instant at(std::chrono::nanoseconds since) { return instant{since}; }

profile_ticks window(std::chrono::nanoseconds start, std::chrono::nanoseconds length) {
  return profile_ticks::from_start_end(at(start), at(start + length));
}

TEST(StreamReadOrder, AWindowPlacedBeforeItsSubmissionIsMovedWholeToStartThere) {
  stream_read_order order;
  const profile_ticks placed = place_in_stream_order(order, 1, window(1000ns, 500ns), at(1200ns));
  EXPECT_EQ(placed.start(), at(1200ns));
  EXPECT_EQ(placed.length(), 500ns);
}

TEST(StreamReadOrder, AWindowReadAfterAnEarlierOneOfItsStreamStartsNoEarlierThanThatOneEnded) {
  stream_read_order order;
  // The first was moved to its submission (1200 + 500): the second, which the mapping places at
  // 1600, ran after it.
  const profile_ticks first = place_in_stream_order(order, 1, window(1000ns, 500ns), at(1200ns));
  const profile_ticks second = place_in_stream_order(order, 2, window(1600ns, 300ns), at(900ns));
  EXPECT_EQ(second.start(), first.end());
  EXPECT_EQ(second.length(), 300ns);
}

TEST(StreamReadOrder, AWindowAlreadyAfterItsStreamsLastOneIsLeftWhereTheMappingPutIt) {
  stream_read_order order;
  (void)place_in_stream_order(order, 1, window(1000ns, 500ns), at(900ns));
  const profile_ticks second = place_in_stream_order(order, 2, window(1700ns, 300ns), at(950ns));
  EXPECT_EQ(second.start(), at(1700ns));
  EXPECT_EQ(second.end(), at(2000ns));
}

TEST(StreamReadOrder, AWindowReadAfterALaterOneOfItsStreamIsPlacedByItsSubmissionAlone) {
  stream_read_order order;
  const profile_ticks later = place_in_stream_order(order, 5, window(5000ns, 100ns), at(4000ns));
  // Launch 3 ran before launch 5, so launch 5's end says nothing about where launch 3 starts.
  const profile_ticks earlier = place_in_stream_order(order, 3, window(3000ns, 100ns), at(2000ns));
  EXPECT_EQ(earlier.start(), at(3000ns));
  // And the order still holds launch 5: launch 6 is placed after it.
  const profile_ticks next = place_in_stream_order(order, 6, window(5050ns, 100ns), at(4100ns));
  EXPECT_EQ(next.start(), later.end());
}

}  // namespace
}  // namespace launchwatch::detail
