// The backend conformance suite, graphs: capturing launches into a graph and replaying it.
// Written once for every backend: see conformance_suite.hpp for how a backend runs it.
#pragma once

#include <memory>
#include <stdexcept>
#include <vector>

#include "conformance/conformance_fixture.hpp"

namespace launchwatch::conformance {

template <class Backend>
class backend_graphs : public backend_test<Backend> {};

TYPED_TEST_SUITE_P(backend_graphs);

TYPED_TEST_P(backend_graphs, ACaptureRecordsAndReportsLaunchesWithoutRunningThem) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  auto seen = std::make_shared<info_recorder>();
  graph recorded;
  {
    launch_observation watching{seen};
    recorded = client.capture([&] {
      client.launch(fill{values.view(), 2}, cube_count{1}, cube_dim{8});
      client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
    });
  }
  EXPECT_EQ(recorded.size(), 2u);
  EXPECT_EQ(client.read(values), std::vector<int>(8, 0));
  const auto all = seen->all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE(all[0].info.capturing);
  EXPECT_TRUE(all[1].info.capturing);
}

TYPED_TEST_P(backend_graphs, AReplayRunsEveryRecordedLaunchAndIsNotReported) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  graph recorded = client.capture([&] {
    client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
    client.launch(twice{values.view()}, cube_count{1}, cube_dim{8});
  });
  auto names = std::make_shared<testing::recording_observer>();
  {
    launch_observation watching{names};
    recorded.replay();  // (0 + 1) * 2 = 2
    recorded.replay();  // (2 + 1) * 2 = 6
  }
  EXPECT_EQ(client.read(values), std::vector<int>(8, 6));
  EXPECT_TRUE(names->names().empty());
}

TYPED_TEST_P(backend_graphs, BeginAndEndCaptureRecordLikeCapture) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  client.begin_capture();
  EXPECT_TRUE(client.capturing());
  client.launch(fill{values.view(), 3}, cube_count{1}, cube_dim{8});
  graph recorded = client.end_capture();
  EXPECT_FALSE(client.capturing());
  EXPECT_EQ(client.read(values), std::vector<int>(8, 0));
  recorded.replay();
  EXPECT_EQ(client.read(values), std::vector<int>(8, 3));
}

TYPED_TEST_P(backend_graphs, ReadsAndSyncsOnACapturingStreamAreRefused) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  client.begin_capture();
  EXPECT_THROW((void)client.read(values), capture_error);
  EXPECT_THROW(client.sync(), capture_error);
  try {
    client.sync();
  } catch (const capture_error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("capture"));
  }
  (void)client.end_capture();
  EXPECT_NO_THROW(client.sync());
  EXPECT_EQ(client.read(values), std::vector<int>(8, 0));
}

TYPED_TEST_P(backend_graphs, AProfileInACaptureWindowIsRefusedWithAWarningAndTheLaunchStillRecorded) {
  launchwatch::client& client = this->client();
  testing::captured_log log;
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto values = client.template empty<int>(8);
  graph recorded;
  {
    launch_observation watching{keeps};
    recorded = client.capture([&] {
      client.launch(fill{values.view(), 8}, cube_count{1}, cube_dim{8});
    });
  }
  EXPECT_TRUE(keeps->take_profiles().empty());
  EXPECT_EQ(log->count_containing("Skipped timing a launch of"), 1u);
  ASSERT_EQ(recorded.size(), 1u);
  recorded.replay();
  EXPECT_EQ(client.read(values), std::vector<int>(8, 8));
}

TYPED_TEST_P(backend_graphs, ACaptureWhoseFunctionThrowsIsAbandoned) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  EXPECT_THROW((void)client.capture([&] {
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
    throw std::runtime_error{"recording went wrong"};
  }),
               std::runtime_error);
  EXPECT_FALSE(client.capturing());
  client.launch(fill{values.view(), 2}, cube_count{1}, cube_dim{8});
  EXPECT_EQ(client.read(values), std::vector<int>(8, 2));
}

TYPED_TEST_P(backend_graphs, CapturesDoNotNestAndEndNeedsABeginning) {
  launchwatch::client& client = this->client();
  EXPECT_THROW((void)client.end_capture(), capture_error);
  client.begin_capture();
  EXPECT_THROW(client.begin_capture(), capture_error);
  (void)client.end_capture();
}

TYPED_TEST_P(backend_graphs, AGraphKeepsTheBuffersItReferencesAlive) {
  launchwatch::client& client = this->client();
  auto keeps = client.template empty<int>(8);
  graph recorded;
  {
    auto scratch = client.template empty<int>(1 << 16);
    recorded = client.capture([&] {
      client.launch(fill{scratch.view(), 1}, cube_count{64}, cube_dim{1024});
      client.launch(fill{keeps.view(), 5}, cube_count{1}, cube_dim{8});
    });
  }
  recorded.replay();  // Writes `scratch`, whose buffer is gone: the graph kept its memory.
  EXPECT_EQ(client.read(keeps), std::vector<int>(8, 5));
}

REGISTER_TYPED_TEST_SUITE_P(backend_graphs,
    ACaptureRecordsAndReportsLaunchesWithoutRunningThem,
    AReplayRunsEveryRecordedLaunchAndIsNotReported,
    BeginAndEndCaptureRecordLikeCapture,
    ReadsAndSyncsOnACapturingStreamAreRefused,
    AProfileInACaptureWindowIsRefusedWithAWarningAndTheLaunchStillRecorded,
    ACaptureWhoseFunctionThrowsIsAbandoned,
    CapturesDoNotNestAndEndNeedsABeginning,
    AGraphKeepsTheBuffersItReferencesAlive);

}  // namespace launchwatch::conformance
