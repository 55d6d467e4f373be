// The backend conformance suite, dry runs: launches validated and reported but not executed.
// Written once for every backend: see conformance_suite.hpp for how a backend runs it.
#pragma once

#include <memory>
#include <vector>

#include "conformance/conformance_fixture.hpp"

namespace launchwatch::conformance {

template <class Backend>
class backend_dry_runs : public backend_test<Backend> {};

TYPED_TEST_SUITE_P(backend_dry_runs);

TYPED_TEST_P(backend_dry_runs, ADryRunValidatesReportsAndLeavesBuffersUntouched) {
  launchwatch::client& client = this->client();
  auto values = client.template create<int>(std::vector<int>(8, 5));
  auto seen = std::make_shared<info_recorder>();
  {
    launch_observation watching{seen};
    dry_run_scope dry;
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
    client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
    EXPECT_THROW(client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{1u << 20}),
                 invalid_launch);
  }
  client.sync();
  EXPECT_EQ(client.read(values), std::vector<int>(8, 5));
  const auto all = seen->all();
  ASSERT_EQ(all.size(), 2u);
  for (const auto& s : all) {
    EXPECT_TRUE(s.dry_run) << "dry_run() was false inside `launched`";
    EXPECT_TRUE(s.info.dry_run);
  }
}

TYPED_TEST_P(backend_dry_runs, ARealRunScopeExecutesInsideADryRun) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  {
    dry_run_scope dry;
    real_run_scope real;
    client.launch(fill{values.view(), 4}, cube_count{1}, cube_dim{8});
  }
  EXPECT_EQ(client.read(values), std::vector<int>(8, 4));
}

TYPED_TEST_P(backend_dry_runs, ADryRunTimedLaunchIsMeasuredOnTheHost) {
  launchwatch::client& client = this->client();
  auto times = std::make_shared<testing::recording_observer>(timing_request::resolved);
  {
    launch_observation watching{times};
    dry_run_scope dry;
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
  }
  EXPECT_THAT(times->timings(), ::testing::ElementsAre(testing::TimedWith(timing_method::system)));
}

REGISTER_TYPED_TEST_SUITE_P(backend_dry_runs,
    ADryRunValidatesReportsAndLeavesBuffersUntouched,
    ARealRunScopeExecutesInsideADryRun,
    ADryRunTimedLaunchIsMeasuredOnTheHost);

}  // namespace launchwatch::conformance
