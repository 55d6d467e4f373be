// The zeroed buffers the bridge gives CUPTI (src/cuda_bridge/activity_buffer_pool.hpp): CUPTI is
// told they are zero, so a byte left over from an earlier use would reach a later record.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_bridge/activity_buffer_pool.hpp"

namespace launchwatch::detail::cuda_bridge {
namespace {

constexpr std::size_t small_buffer = std::size_t{64} << 10;

bool all_zero(const std::uint8_t* buffer, std::size_t bytes) {
  return std::all_of(buffer, buffer + bytes, [](std::uint8_t b) { return b == 0; });
}

TEST(ActivityBufferPool, ABufferTakenFromAnEmptyPoolIsZeroThroughout) {
  activity_buffer_pool pool{small_buffer, 4};
  std::uint8_t* buffer = pool.take();
  ASSERT_NE(buffer, nullptr);
  EXPECT_TRUE(all_zero(buffer, pool.buffer_bytes()));
  EXPECT_EQ(pool.allocated(), 1u);
  EXPECT_TRUE(pool.give_back(buffer, 0));
}

TEST(ActivityBufferPool, ABufferGivenBackIsZeroAgainWhereItWasWrittenAndPastItsLastRecord) {
  activity_buffer_pool pool{small_buffer, 4};
  std::uint8_t* buffer = pool.take();
  ASSERT_NE(buffer, nullptr);
  // Records up to `used`, and a record begun after them that CUPTI did not count as valid.
  constexpr std::size_t used = 10'000;
  std::memset(buffer, 0xab, used);
  std::memset(buffer + used, 0xcd, 200);
  EXPECT_TRUE(pool.give_back(buffer, used));

  std::uint8_t* again = pool.take();
  EXPECT_EQ(again, buffer) << "the buffer given back was not reused";
  EXPECT_TRUE(all_zero(again, pool.buffer_bytes()));
  EXPECT_EQ(pool.allocated(), 1u);
  EXPECT_TRUE(pool.give_back(again, 0));
}

TEST(ActivityBufferPool, ABufferWrittenToItsEndIsZeroThroughoutWhenTakenAgain) {
  activity_buffer_pool pool{small_buffer, 4};
  std::uint8_t* buffer = pool.take();
  ASSERT_NE(buffer, nullptr);
  std::memset(buffer, 0xff, pool.buffer_bytes());
  EXPECT_TRUE(pool.give_back(buffer, pool.buffer_bytes()));
  std::uint8_t* again = pool.take();
  EXPECT_TRUE(all_zero(again, pool.buffer_bytes()));
  EXPECT_TRUE(pool.give_back(again, 0));
}

TEST(ActivityBufferPool, BuffersFilledBeforeTheFirstLaunchAreTakenWithoutAllocating) {
  activity_buffer_pool pool{small_buffer, 4};
  pool.fill(3);
  EXPECT_EQ(pool.ready(), 3u);
  EXPECT_EQ(pool.allocated(), 3u);
  std::vector<std::uint8_t*> taken;
  for (int i = 0; i < 3; ++i) taken.push_back(pool.take());
  EXPECT_EQ(pool.allocated(), 3u) << "a take allocated although buffers were ready";
  for (std::uint8_t* buffer : taken) {
    ASSERT_NE(buffer, nullptr);
    EXPECT_TRUE(all_zero(buffer, pool.buffer_bytes()));
    EXPECT_TRUE(pool.give_back(buffer, 0));
  }
}

TEST(ActivityBufferPool, FillNeverKeepsMoreThanThePoolKeeps) {
  activity_buffer_pool pool{small_buffer, 2};
  pool.fill(5);
  EXPECT_EQ(pool.ready(), 2u);
}

TEST(ActivityBufferPool, BuffersBeyondThoseKeptAreFreedWhenTheyComeBack) {
  activity_buffer_pool pool{small_buffer, 2};
  std::vector<std::uint8_t*> taken;
  for (int i = 0; i < 5; ++i) taken.push_back(pool.take());
  EXPECT_EQ(pool.allocated(), 5u);
  for (std::uint8_t* buffer : taken) EXPECT_TRUE(pool.give_back(buffer, 100));
  EXPECT_EQ(pool.ready(), 2u);
}

TEST(ActivityBufferPool, ABufferItDidNotHandOutIsRefusedAndLeftUntouched) {
  activity_buffer_pool pool{small_buffer, 4};
  // Another CUPTI client's buffer, smaller than the pool's: zeroing or reusing it would overrun it.
  std::vector<std::uint8_t> foreign(100, 0xab);
  EXPECT_FALSE(pool.give_back(foreign.data(), 50));
  EXPECT_EQ(foreign, std::vector<std::uint8_t>(100, 0xab));
  EXPECT_FALSE(pool.give_back(nullptr, 0));
  EXPECT_EQ(pool.ready(), 0u);
}

TEST(ActivityBufferPool, ThreadsTakingAndGivingBackAtOnceAlwaysTakeZeroedBuffers) {
  activity_buffer_pool pool{small_buffer, 4};
  pool.fill(2);
  std::atomic<int> dirty{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&pool, &dirty, &failed, t] {
      for (int i = 0; i < 400; ++i) {
        std::uint8_t* buffer = pool.take();
        if (buffer == nullptr) {
          failed.fetch_add(1);
          continue;
        }
        // Where each thread writes: the start always, and a spread of lengths.
        const std::size_t used = static_cast<std::size_t>((t * 997 + i * 131) % 20'000) + 8;
        if (!all_zero(buffer, used + 64)) dirty.fetch_add(1);
        std::memset(buffer, 0x5a, used);
        if (!pool.give_back(buffer, used)) failed.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(dirty.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_LE(pool.ready(), 4u);
}

}  // namespace
}  // namespace launchwatch::detail::cuda_bridge
