// Deferred timing's budget on CUDA: run with LAUNCHWATCH_CUDA_TIMING_SLOTS=64 (see CMakeLists.txt),
// one batch of slots, so a test can reach the end of it. Skips where no GPU is visible.

#include <launchwatch/launchwatch.hpp>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/conformance_kernels.hpp"
#include "cuda/cuda_backend.hpp"
#include "support/capturing_sink.hpp"
#include "support/recording_observer.hpp"

namespace launchwatch {
namespace {

using conformance::fill;
using conformance::spin;

// Issue 10: when every slot holds a launch that has not run, a launch goes on untimed, said once,
// rather than throwing from client.launch; once the slots are read back, launches are timed again.
TEST(CudaTimingBudget, WhenEverySlotIsInFlightALaunchGoesOnUntimedWithOneWarning) {
  if (const auto why = conformance::cuda_backend::unavailable()) GTEST_SKIP() << *why;
  ASSERT_STREQ(std::getenv("LAUNCHWATCH_CUDA_TIMING_SLOTS"), "64");
  auto client = client::cuda();
  testing::captured_log log;
  auto keeps = std::make_shared<testing::recording_observer>(timing_request::deferred);
  auto values = client.empty<int>(1);
  constexpr int launches = 200;  // behind one long kernel: more than the 64 slots
  {
    launch_observation watching{keeps};
    client.launch(spin{200'000'000ull, values.view()}, cube_count{1}, cube_dim{1});
    for (int i = 0; i < launches; ++i) client.launch(fill{values.view(), i}, cube_count{1}, cube_dim{1});
  }
  EXPECT_EQ(client.read(values), std::vector<int>{launches - 1}) << "every launch ran";
  auto kept = keeps->take_profiles();
  EXPECT_EQ(kept.size(), 64u) << "exactly the budget's launches were timed";
  for (auto& [kernel, profile] : kept) EXPECT_TRUE(std::move(profile).resolve().has_value()) << kernel;
  EXPECT_EQ(log->count_containing("every deferred-timing slot"), 1u);
  {
    launch_observation watching{keeps};
    client.launch(fill{values.view(), 7}, cube_count{1}, cube_dim{1});
  }
  EXPECT_EQ(keeps->take_profiles().size(), 1u) << "the slots came back once read";
}

}  // namespace
}  // namespace launchwatch
