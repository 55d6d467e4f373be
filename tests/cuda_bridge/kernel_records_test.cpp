// The kernel-record table (src/cuda_bridge/kernel_records.hpp) under concurrency: a launch's own
// steps (await, adopt, and the read or drop of an arrived record) take no lock, while buffers are
// applied, the collector flushes and callbacks turn off on other threads. Stresses for TSan; the
// table's single-threaded behaviour is tested through the core in bridge_core_test.cpp.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_bridge/kernel_records.hpp"
#include "support/thread_names.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using detail::cuda_bridge::kernel_record;
using detail::cuda_bridge::kernel_records;

/// A device of one buffer: launches leave their records in it, and a flush (the collector's, a
/// reader's) or the delivering thread hands what it holds to the table in one call, as CUPTI does.
class stress_device {
 public:
  /// The table, flushing through this device, its collector started.
  std::shared_ptr<kernel_records> make_table(std::chrono::milliseconds timeout = 30s) {
    auto table = std::make_shared<kernel_records>(
        1ms, timeout, [this](bool) { flush(); }, nullptr, nullptr);
    table_ = table.get();
    table->start();
    return table;
  }

  /// A kernel of `correlation` (CUPTI's 32-bit id) ran: its window is [id * 10, id * 10 + 5].
  void ran(std::uint32_t correlation) {
    const std::uint64_t start = std::uint64_t{correlation} * 10;
    std::lock_guard lock{mutex_};
    buffer_.push_back(kernel_record{correlation, 0, 0, 0, start, start + 5});
  }

  /// Hands the buffer over.
  void flush() {
    std::vector<kernel_record> handed;
    {
      std::lock_guard lock{mutex_};
      handed.swap(buffer_);
    }
    if (!handed.empty()) table_->on_records(handed, 0);
  }

 private:
  kernel_records* table_ = nullptr;
  std::mutex mutex_;
  std::vector<kernel_record> buffer_;
};

/// CUPTI's next correlation id, shared by every launching thread as the process's CUDA calls are.
std::uint32_t next_id(std::atomic<std::uint32_t>& ids) {
  return ids.fetch_add(1) + 1;
}

/// A thread handing the device's buffers over every `period` until `stop`, as CUPTI's buffer
/// callbacks do on a thread of their own.
std::thread delivering(stress_device& device, const std::atomic<bool>& stop,
                       std::chrono::microseconds period) {
  return std::thread{[&device, &stop, period] {
    while (!stop.load()) {
      device.flush();
      std::this_thread::sleep_for(period);
    }
  }};
}

TEST(KernelRecords, ManyThreadsLaunchingAndReadingWhileBuffersArriveGetEveryRecordExactlyOnce) {
  stress_device device;
  const auto table = device.make_table();
  constexpr int threads = 4;
  constexpr int launches = 30000;
  // Each thread holds up to this many measurements unread, together more than the ring's 65 536
  // slots, so the overflow map is used too; every fifth one is dropped unread.
  constexpr int read_every = 20000;
  std::atomic<std::uint32_t> ids{0};
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::atomic<int> taken{0};
  std::thread deliverer = delivering(device, stop, 50us);
  std::vector<std::thread> launching;
  for (int t = 0; t < threads; ++t) {
    launching.emplace_back([&] {
      std::vector<std::pair<std::uint32_t, std::uint64_t>> unread;
      const auto read_all = [&] {
        for (std::size_t i = 0; i < unread.size(); ++i) {
          const auto [id, wide] = unread[i];
          if (i % 5 == 4) {
            table->forget(wide);
            continue;
          }
          const auto window = table->take(wide);
          const std::int64_t start = std::int64_t{id} * 10;
          if (!window || window->start().time_since_epoch() != std::chrono::nanoseconds{start} ||
              window->length() != 5ns) {
            wrong.fetch_add(1);
          }
          taken.fetch_add(1);
        }
        unread.clear();
      };
      for (int i = 0; i < launches; ++i) {
        const std::uint32_t id = next_id(ids);
        const std::uint64_t wide = table->widen_at_enter(id);
        table->await(wide);
        device.ran(id);  // submitted: its record may be handed over at once
        if (!table->adopt(wide)) wrong.fetch_add(1);
        unread.emplace_back(id, wide);
        if (unread.size() == read_every) read_all();
      }
      read_all();
    });
  }
  for (auto& t : launching) t.join();
  stop.store(true);
  deliverer.join();
  EXPECT_EQ(wrong.load(), 0);
  const auto counts = table->counts();
  EXPECT_EQ(counts.delivered, static_cast<std::uint64_t>(taken.load()));
  EXPECT_EQ(counts.missing, 0u);
  // Nothing is left awaited: a flush of idle devices finds every record delivered at once.
  const auto began = std::chrono::steady_clock::now();
  table->flush_until_delivered(10s, table->mark());
  EXPECT_LT(std::chrono::steady_clock::now() - began, 1s);
  EXPECT_EQ(table->counts().missing, 0u);
  table->close();
}

TEST(KernelRecords,
     CallbacksTurningOffWhileThreadsAreBetweenEnterAndExitForgetOnlyWhatNoOneAdopted) {
  stress_device device;
  const auto table = device.make_table();
  constexpr int threads = 3;
  constexpr int launches = 5000;
  std::atomic<std::uint32_t> ids{0};
  std::atomic<bool> stop{false};
  std::atomic<int> adopted{0};
  std::atomic<int> refused{0};
  std::atomic<int> wrong{0};
  std::thread turning_off{[&] {
    while (!stop.load()) {
      table->forget_unadopted();
      std::this_thread::yield();
    }
  }};
  std::thread deliverer = delivering(device, stop, 20us);
  std::vector<std::thread> launching;
  for (int t = 0; t < threads; ++t) {
    launching.emplace_back([&] {
      for (int i = 0; i < launches; ++i) {
        const std::uint32_t id = next_id(ids);
        const std::uint64_t wide = table->widen_at_enter(id);
        table->await(wide);
        device.ran(id);
        if (!table->adopt(wide)) {
          refused.fetch_add(1);  // forgotten between ENTER and EXIT: its measurement is refused
          continue;
        }
        adopted.fetch_add(1);
        // An adopted entry is never forgotten under its owner: its record resolves.
        const auto window = table->take(wide);
        if (!window || window->length() != 5ns) wrong.fetch_add(1);
      }
    });
  }
  for (auto& t : launching) t.join();
  stop.store(true);
  turning_off.join();
  deliverer.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(adopted.load() + refused.load(), threads * launches);
  const auto counts = table->counts();
  EXPECT_EQ(counts.delivered, static_cast<std::uint64_t>(adopted.load()));
  EXPECT_EQ(counts.missing, 0u);
  const auto began = std::chrono::steady_clock::now();
  table->flush_until_delivered(10s, table->mark());
  EXPECT_LT(std::chrono::steady_clock::now() - began, 1s) << "a forgotten entry stayed awaited";
  table->close();
}

TEST(KernelRecords, FlushingIdleDevicesGivesUpOnlyTheRecordsAwaitedBeforeTheMark) {
  stress_device device;
  const auto table = device.make_table();
  // Awaited before the mark, its kernel never runs: its record is not coming.
  const std::uint64_t before = table->widen_at_enter(7);
  table->await(before);
  ASSERT_TRUE(table->adopt(before));
  const std::uint64_t mark = table->mark();
  // Awaited after the mark: its kernel may still be on its way, so it stays awaited.
  const std::uint64_t after = table->widen_at_enter(9);
  table->await(after);
  ASSERT_TRUE(table->adopt(after));
  table->flush_until_delivered(10s, mark);
  EXPECT_EQ(table->counts().missing, 1u);
  device.ran(9);
  const auto window = table->take(after);
  ASSERT_TRUE(window.has_value()) << "an entry awaited after the mark was given up";
  EXPECT_EQ(window->length(), 5ns);
  const auto began = std::chrono::steady_clock::now();
  EXPECT_FALSE(table->take(before).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - began, 1s) << "a given-up entry was waited for";
  table->close();
}

TEST(KernelRecords, TheCollectorThreadIsNamedLwRecordsForTheToolsThatWatchTheProcess) {
  if (testing::thread_names().empty()) GTEST_SKIP() << "no /proc/self/task here";
  EXPECT_FALSE(testing::has_thread_named("lw-records"));
  stress_device device;
  const auto table = device.make_table();
  EXPECT_TRUE(testing::thread_named_within("lw-records"));
  table->close();
}

}  // namespace
}  // namespace launchwatch
