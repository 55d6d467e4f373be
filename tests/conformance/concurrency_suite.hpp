// The backend conformance suite, concurrency: several threads launching, timing, reading and capturing at once
// (ctest label `concurrency`; must pass under TSan).
// Written once for every backend: see conformance_suite.hpp for how a backend runs it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "conformance/conformance_fixture.hpp"

namespace launchwatch::conformance {

template <class Backend>
class backend_concurrency : public backend_test<Backend> {};

TYPED_TEST_SUITE_P(backend_concurrency);

TYPED_TEST_P(backend_concurrency, ThreadsLaunchingOnTheirOwnStreamsAtOnceEachSeeTheirOwnResults) {
  launchwatch::client& client = this->client();
  constexpr int threads = 6;
  constexpr int launches = 60;
  auto counts = std::make_shared<counter>();
  std::vector<std::vector<int>> results(threads);
  std::vector<std::uint64_t> streams(threads);
  {
    launch_observation watching{counts};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        auto values = client.template create<int>(std::vector<int>(256, t));
        for (int i = 0; i < launches; ++i) {
          client.launch(add_one{values.view()}, cube_count{2}, cube_dim{128});
        }
        results[t] = client.read(values);
        streams[t] = client.stream_id();
        client.sync();
      });
    }
    for (auto& w : workers) w.join();
  }
  EXPECT_EQ(counts->count(), static_cast<std::size_t>(threads * launches));
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(results[t], std::vector<int>(256, t + launches)) << "thread " << t;
  }
  EXPECT_EQ(std::set<std::uint64_t>(streams.begin(), streams.end()).size(),
            static_cast<std::size_t>(threads));
}

TYPED_TEST_P(backend_concurrency, ThreadsTimingTheirLaunchesAtOnceEachGetTheirOwnMeasurements) {
  launchwatch::client& client = this->client();
  constexpr int threads = 4;
  constexpr int launches = 40;
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  {
    launch_observation watching{keeps};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&] {
        auto values = client.template empty<int>(4096);
        for (int i = 0; i < launches; ++i) {
          client.launch(add_one{values.view()}, cube_count{4}, cube_dim{1024});
        }
        EXPECT_EQ(client.read(values), std::vector<int>(4096, launches));
      });
    }
    for (auto& w : workers) w.join();
  }
  auto kept = keeps->take_profiles();
  ASSERT_EQ(kept.size(), static_cast<std::size_t>(threads * launches));
  for (auto& [name, profile] : kept) {
    const auto ticks = std::move(profile).resolve();
    ASSERT_TRUE(ticks.has_value());
    EXPECT_LE(ticks->start(), ticks->end());
  }
}

TYPED_TEST_P(backend_concurrency, ThreadsSharingAPinnedStreamSeeTheirOwnLaunchesInTheirReads) {
  launchwatch::client pinned = this->client().pinned();
  constexpr int threads = 4;
  constexpr int launches = 50;
  auto shared = pinned.template empty<int>(1);
  std::vector<buffer<int>> own;
  for (int t = 0; t < threads; ++t) own.push_back(pinned.template empty<int>(1));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 1; i <= launches; ++i) {
        // One stream runs every thread's launches in one order, so the shared counter needs no
        // other synchronisation; a read sees at least the reader's own launches.
        pinned.launch(add_one{shared.view()}, cube_count{1}, cube_dim{1});
        pinned.launch(add_one{own[t].view()}, cube_count{1}, cube_dim{1});
        if (i % 10 == 0) EXPECT_EQ(pinned.read(own[t]), std::vector<int>{i});
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(pinned.read(shared), std::vector<int>{threads * launches});
}

TYPED_TEST_P(backend_concurrency, ACaptureOnOneThreadDoesNotRecordAnotherThreadsLaunches) {
  launchwatch::client& client = this->client();
  auto mine = client.template empty<int>(8);
  auto theirs = client.template empty<int>(8);
  std::atomic<bool> capturing{false};
  std::atomic<bool> launched{false};
  std::thread other{[&] {
    while (!capturing.load()) std::this_thread::yield();
    client.launch(fill{theirs.view(), 7}, cube_count{1}, cube_dim{8});
    launched.store(true);
  }};
  graph recorded = client.capture([&] {
    capturing.store(true);
    client.launch(fill{mine.view(), 1}, cube_count{1}, cube_dim{8});
    while (!launched.load()) std::this_thread::yield();
  });
  other.join();
  EXPECT_EQ(recorded.size(), 1u);
  EXPECT_EQ(client.read(theirs), std::vector<int>(8, 7));
  EXPECT_EQ(client.read(mine), std::vector<int>(8, 0));
}

REGISTER_TYPED_TEST_SUITE_P(backend_concurrency,
    ThreadsLaunchingOnTheirOwnStreamsAtOnceEachSeeTheirOwnResults,
    ThreadsTimingTheirLaunchesAtOnceEachGetTheirOwnMeasurements,
    ThreadsSharingAPinnedStreamSeeTheirOwnLaunchesInTheirReads,
    ACaptureOnOneThreadDoesNotRecordAnotherThreadsLaunches);

}  // namespace launchwatch::conformance
