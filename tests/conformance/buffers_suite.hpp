// The backend conformance suite, buffers, reads and streams: what a buffer holds, what a read waits for, and
// which stream a thread launches on.
// Written once for every backend: see conformance_suite.hpp for how a backend runs it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "conformance/conformance_fixture.hpp"

namespace launchwatch::conformance {

template <class Backend>
class backend_buffers : public backend_test<Backend> {};

TYPED_TEST_SUITE_P(backend_buffers);

// ---------------------------------------------------------------------------------------------
// Buffers and views.

TYPED_TEST_P(backend_buffers, CreatesBuffersFromRangesAndEmptyBuffersAsZeros) {
  launchwatch::client& client = this->client();
  const std::array<int, 4> from_array{1, 2, 3, 4};
  EXPECT_EQ(client.read(client.create(from_array)), std::vector<int>({1, 2, 3, 4}));
  EXPECT_EQ(client.read(client.create<int>({5, 6})), std::vector<int>({5, 6}));
  EXPECT_EQ(client.read(client.empty<int>(3)), std::vector<int>(3, 0));
  EXPECT_TRUE(client.read(client.empty<int>(0)).empty());
}

TYPED_TEST_P(backend_buffers, AViewOfPartOfABufferReachesOnlyThatPart) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(10);
  client.launch(fill{values.view(2, 3), 7}, cube_count{1}, cube_dim{32});
  EXPECT_EQ(client.read(values), std::vector<int>({0, 0, 7, 7, 7, 0, 0, 0, 0, 0}));
}

TYPED_TEST_P(backend_buffers, AViewOfARangeOutsideTheBufferThrowsOutOfRange) {
  auto values = this->client().template empty<int>(10);
  EXPECT_THROW((void)values.view(8, 3), std::out_of_range);
  EXPECT_THROW((void)values.view(11, 0), std::out_of_range);
  EXPECT_NO_THROW((void)values.view(10, 0));
}

TYPED_TEST_P(backend_buffers, ReadingABufferOfAnotherDeviceIsRejected) {
  launchwatch::client other = TypeParam::other_device();
  auto foreign = other.template empty<int>(4);
  EXPECT_THROW((void)this->client().read(foreign), invalid_launch);
}

// ---------------------------------------------------------------------------------------------
// Streams and reads.

TYPED_TEST_P(backend_buffers, AReadWaitsOnlyForTheLaunchesThatReferencedItsBuffer) {
  launchwatch::client slow = this->client().pinned();
  launchwatch::client fast = this->client().pinned();
  auto slow_done = slow.template empty<int>(1);
  auto values = fast.template empty<int>(8);
  // Each kernel launched once first: a backend that loads a kernel at its first launch (CUDA's
  // lazy module loading) may wait for the device to do so, which is not what this test is about.
  slow.launch(spin{1'000ull, slow_done.view()}, cube_count{1}, cube_dim{1});
  fast.launch(fill{values.view(), 0}, cube_count{1}, cube_dim{8});
  slow.sync();
  fast.sync();
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  std::optional<profile_duration> slow_window;
  {
    launch_observation watching{keeps};
    slow.launch(spin{1'000'000'000ull, slow_done.view()}, cube_count{1}, cube_dim{1});
    slow_window.emplace(std::move(keeps->take_profiles().at(0).profile));
  }
  fast.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
  EXPECT_EQ(fast.read(values), std::vector<int>(8, 1));
  const auto read_at = std::chrono::steady_clock::now();
  const auto window = std::move(*slow_window).resolve();
  ASSERT_TRUE(window.has_value());
  EXPECT_LT(read_at, window->end()) << "the read waited for a launch on another stream that never "
                                       "referenced its buffer";
  EXPECT_EQ(slow.read(slow_done), std::vector<int>{1});
}

TYPED_TEST_P(backend_buffers, AReadWaitsForEveryStreamThatWroteItsBuffer) {
  launchwatch::client writer = this->client().pinned();
  launchwatch::client reader = this->client().pinned();
  auto values = writer.template empty<int>(8);
  writer.launch(spin{20'000'000ull, device_span<int>{}}, cube_count{1}, cube_dim{1});
  writer.launch(fill{values.view(), 6}, cube_count{1}, cube_dim{8});
  EXPECT_EQ(reader.read(values), std::vector<int>(8, 6));
}

TYPED_TEST_P(backend_buffers, ABufferDestroyedUnderAPendingLaunchIsFreedAfterIt) {
  launchwatch::client& client = this->client();
  {
    auto scratch = client.template empty<int>(1 << 16);
    client.launch(spin{20'000'000ull, device_span<int>{}}, cube_count{1}, cube_dim{1});
    client.launch(fill{scratch.view(), 1}, cube_count{64}, cube_dim{1024});
  }  // The fill is still queued behind the spin: freeing now would be a use after free.
  EXPECT_NO_THROW(client.sync());
}

TYPED_TEST_P(backend_buffers, EachThreadLaunchesOnAStreamOfItsOwnAndAPinnedClientOnOne) {
  launchwatch::client& client = this->client();
  auto pinned = client.pinned();
  std::uint64_t other_thread_stream = 0;
  std::uint64_t other_thread_pinned = 0;
  std::thread{[&] {
    other_thread_stream = client.stream_id();
    other_thread_pinned = pinned.stream_id();
  }}.join();
  EXPECT_NE(client.stream_id(), other_thread_stream);
  EXPECT_EQ(pinned.stream_id(), other_thread_pinned);
  EXPECT_NE(pinned.stream_id(), client.stream_id());
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(client.is_pinned());
}

REGISTER_TYPED_TEST_SUITE_P(backend_buffers,
    CreatesBuffersFromRangesAndEmptyBuffersAsZeros,
    AViewOfPartOfABufferReachesOnlyThatPart,
    AViewOfARangeOutsideTheBufferThrowsOutOfRange,
    ReadingABufferOfAnotherDeviceIsRejected,
    AReadWaitsOnlyForTheLaunchesThatReferencedItsBuffer,
    AReadWaitsForEveryStreamThatWroteItsBuffer,
    ABufferDestroyedUnderAPendingLaunchIsFreedAfterIt,
    EachThreadLaunchesOnAStreamOfItsOwnAndAPinnedClientOnOne);

}  // namespace launchwatch::conformance
