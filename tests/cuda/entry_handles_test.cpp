// The table of kernel entries' driver handles (src/backend/gpu/entry_handles.hpp) on the CPU: each
// entry looked up once however many launches and threads ask, every entry given its own handle,
// and a full table still answering. Needs no GPU and no CUDA: built in every preset.
#include <array>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backend/gpu/entry_handles.hpp"

namespace launchwatch::detail::gpu {
namespace {

/// Stand-ins for kernel entries' host stubs: adjacent addresses, as entries are in a program's text.
std::array<char, 4096> stubs{};

const void* stub(std::size_t i) { return &stubs[i]; }

/// A handle that names its stub, so a test can tell whose it got.
const char* handle_of(const void* stub) { return static_cast<const char*>(stub) + 1; }

/// Counts the lookups of each stub, and answers as the driver would.
struct counting_lookup {
  std::array<std::atomic<int>, 4096>* asked;
  const char* operator()(const void* s) const {
    (*asked)[static_cast<std::size_t>(static_cast<const char*>(s) - stubs.data())].fetch_add(1);
    return handle_of(s);
  }
};

TEST(EntryHandles, AnEntryIsLookedUpOnceHoweverOftenItLaunches) {
  entry_handles<const char*> table;
  std::array<std::atomic<int>, 4096> asked{};
  for (int launch = 0; launch < 100; ++launch) {
    EXPECT_EQ(table.handle(stub(7), counting_lookup{&asked}), handle_of(stub(7)));
  }
  EXPECT_EQ(asked[7].load(), 1);
  EXPECT_TRUE(table.find(stub(7)).known);
}

TEST(EntryHandles, AnEntryWithNoHandleIsAskedAboutOnce) {
  entry_handles<const char*> table;
  int asked = 0;
  const auto none = [&](const void*) -> const char* {
    ++asked;
    return nullptr;
  };
  for (int launch = 0; launch < 10; ++launch) EXPECT_EQ(table.handle(stub(3), none), nullptr);
  EXPECT_EQ(asked, 1) << "a failing entry would pay the runtime's lookup on every launch";
  EXPECT_TRUE(table.find(stub(3)).known);
}

TEST(EntryHandles, EveryEntryGetsItsOwnHandleAmongHundredsOfNeighbours) {
  entry_handles<const char*> table;
  std::array<std::atomic<int>, 4096> asked{};
  constexpr std::size_t entries = 700;  // under three-quarters of 1024: every one kept
  for (std::size_t i = 0; i < entries; ++i) (void)table.handle(stub(i * 5), counting_lookup{&asked});
  EXPECT_EQ(table.size(), entries);
  for (std::size_t i = 0; i < entries; ++i) {
    const auto found = table.find(stub(i * 5));
    ASSERT_TRUE(found.known) << "entry " << i;
    EXPECT_EQ(found.handle, handle_of(stub(i * 5))) << "entry " << i;
  }
  EXPECT_FALSE(table.find(stub(1)).known) << "a stub never launched is not in the table";
}

TEST(EntryHandles, AFullTableStillAnswersNewEntriesWithoutKeepingThem) {
  entry_handles<const char*, 8> table;
  std::array<std::atomic<int>, 4096> asked{};
  for (std::size_t i = 0; i < 6; ++i) (void)table.handle(stub(i), counting_lookup{&asked});
  EXPECT_EQ(table.size(), 6u) << "three-quarters of 8";
  for (int launch = 0; launch < 3; ++launch) {
    EXPECT_EQ(table.handle(stub(100), counting_lookup{&asked}), handle_of(stub(100)));
  }
  EXPECT_EQ(asked[100].load(), 3) << "an entry the table has no room for is looked up each launch";
  EXPECT_FALSE(table.find(stub(100)).known);
  EXPECT_EQ(table.handle(stub(2), counting_lookup{&asked}), handle_of(stub(2)));
  EXPECT_EQ(asked[2].load(), 1) << "entries kept before it was full are still found";
}

TEST(EntryHandles, ThreadsLaunchingTheSameNewEntriesAtOnceLookEachUpOnce) {
  entry_handles<const char*> table;
  std::array<std::atomic<int>, 4096> asked{};
  constexpr std::size_t entries = 300;
  std::atomic<bool> go{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (int pass = 0; pass < 20; ++pass) {
        for (std::size_t i = 0; i < entries; ++i) {  // every thread in one order: first lookups race
          if (table.handle(stub(i * 3), counting_lookup{&asked}) != handle_of(stub(i * 3))) {
            wrong.fetch_add(1);
          }
        }
      }
    });
  }
  go.store(true);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  for (std::size_t i = 0; i < entries; ++i) EXPECT_EQ(asked[i * 3].load(), 1) << "entry " << i;
}

}  // namespace
}  // namespace launchwatch::detail::gpu
