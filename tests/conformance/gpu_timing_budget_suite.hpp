// Deferred timing's budget on a GPU backend, written once and typed over CUDA and HIP: the timing
// slots of backend/gpu on a real device, run in a binary of its own under the backend's slot
// variable set to 512, one block. Skips where no device is visible. A backend's fixture
// (cuda/cuda_backend.hpp, hip/hip_backend.hpp) adds to the conformance one a `runtime`: the
// backend's runtime class (src/backend/<name>/<name>_runtime.hpp), which names the slot variable.
#pragma once

#include <launchwatch/launchwatch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/conformance_fixture.hpp"
#include "conformance/conformance_kernels.hpp"
#include "support/capturing_sink.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch::conformance {

template <class Backend>
class gpu_timing_budget : public backend_test<Backend> {};
TYPED_TEST_SUITE_P(gpu_timing_budget);

// Issue 10: when every slot holds a launch that has not run, a launch goes on untimed, said once,
// rather than throwing from client.launch; once the slots are read back, launches are timed again.
TYPED_TEST_P(gpu_timing_budget, WhenEverySlotIsInFlightALaunchGoesOnUntimedWithOneWarning) {
  const std::string variable{TypeParam::runtime::timing_slots_variable};
  constexpr std::size_t budget = 512;  // one block of slots, as the test's CMake sets
  ASSERT_EQ(std::getenv(variable.c_str()), std::to_string(budget));
  auto& client = this->client();
  testing::captured_log log;
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto values = client.template empty<int>(1);
  constexpr int launches = 1200;  // behind one long kernel: more than the slots
  {
    launch_observation watching{keeps};
    client.launch(spin{200'000'000ull, values.view()}, cube_count{1}, cube_dim{1});
    for (int i = 0; i < launches; ++i) {
      client.launch(fill{values.view(), i}, cube_count{1}, cube_dim{1});
    }
  }
  EXPECT_EQ(client.read(values), std::vector<int>{launches - 1}) << "every launch ran";
  auto kept = keeps->take_profiles();
  EXPECT_EQ(kept.size(), budget) << "exactly the budget's launches were timed";
  for (auto& one : kept) {
    EXPECT_TRUE(std::move(one.profile).resolve().has_value()) << one.kernel;
  }
  EXPECT_EQ(log->count_containing("every deferred-timing slot"), 1u);
  {
    launch_observation watching{keeps};
    client.launch(fill{values.view(), 7}, cube_count{1}, cube_dim{1});
  }
  EXPECT_EQ(keeps->take_profiles().size(), 1u) << "the slots came back once read";
}

REGISTER_TYPED_TEST_SUITE_P(gpu_timing_budget,
                            WhenEverySlotIsInFlightALaunchGoesOnUntimedWithOneWarning);

}  // namespace launchwatch::conformance
