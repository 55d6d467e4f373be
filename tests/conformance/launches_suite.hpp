// The backend conformance suite, launches: running kernels, steps 1 and 2 of the launch path (an empty grid, a bad
// configuration) and step 6 (a kernel that fails).
// Written once for every backend: see conformance_suite.hpp for how a backend runs it.
#pragma once

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "conformance/conformance_fixture.hpp"

namespace launchwatch::conformance {

template <class Backend>
class backend_launches : public backend_test<Backend> {};

TYPED_TEST_SUITE_P(backend_launches);

// ---------------------------------------------------------------------------------------------
// Running kernels.

TYPED_TEST_P(backend_launches, RunsTheDesignExampleAxpy) {
  launchwatch::client& client = this->client();
  const std::size_t n = 1000;
  std::vector<float> host_values(n);
  std::iota(host_values.begin(), host_values.end(), 0.0f);
  const int blocks = static_cast<int>((n + 255) / 256);

  launchwatch::buffer<float> x = client.create<float>(host_values);
  launchwatch::buffer<float> y = client.empty<float>(n);
  client.launch(axpy{2.0f, x.view(), y.view()}, launchwatch::cube_count{blocks},
                launchwatch::cube_dim{256});
  std::vector<float> out = client.read(y);
  client.sync();

  ASSERT_EQ(out.size(), n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], 2.0f * host_values[i]) << "at " << i;
}

TYPED_TEST_P(backend_launches, RunsEveryUnitOfAThreeAxisGridOnceAtItsAbsolutePosition) {
  launchwatch::client& client = this->client();
  const cube_count count{3u, 2u, 2u};
  const cube_dim dim{4u, 2u, 3u};
  const std::size_t n = count.total() * dim.total();
  auto out = client.empty<std::uint64_t>(n);
  client.launch(where_am_i{out.view()}, count, dim);
  const auto values = client.read(out);

  // Rebuild what each position should hold from the definition of absolute_pos (x fastest).
  std::vector<std::uint64_t> expected(n, 0);
  for (std::uint32_t cz = 0; cz < count.z; ++cz)
    for (std::uint32_t cy = 0; cy < count.y; ++cy)
      for (std::uint32_t cx = 0; cx < count.x; ++cx)
        for (std::uint32_t uz = 0; uz < dim.z; ++uz)
          for (std::uint32_t uy = 0; uy < dim.y; ++uy)
            for (std::uint32_t ux = 0; ux < dim.x; ++ux) {
              const unit u{{cx, cy, cz}, {ux, uy, uz}, dim, count};
              expected[u.absolute_pos()] = u.cube_index() * 4096 + u.unit_index() + 1;
            }
  EXPECT_EQ(values, expected);
}

TYPED_TEST_P(backend_launches, RunsOneStreamsLaunchesInIssueOrder) {
  launchwatch::client& client = this->client();
  auto values = client.create<int>(std::vector<int>(64, 1));
  // (1 + 1) * 2 + 1 = 5 in this order; any other order gives another number.
  client.launch(add_one{values.view()}, cube_count{1}, cube_dim{64});
  client.launch(twice{values.view()}, cube_count{1}, cube_dim{64});
  client.launch(add_one{values.view()}, cube_count{1}, cube_dim{64});
  EXPECT_EQ(client.read(values), std::vector<int>(64, 5));
}

// ---------------------------------------------------------------------------------------------
// Steps 1 and 2 of the launch path: an empty grid, a bad configuration.

TYPED_TEST_P(backend_launches, AnEmptyGridLaunchesAndReportsNothing) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  auto names = std::make_shared<testing::recording_observer>();
  {
    launch_observation watching{names};
    client.launch(fill{values.view(), 1}, cube_count{0}, cube_dim{8});
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8u, 0u});
    client.launch(fill{values.view(), 1}, cube_count{1u, 1u, 0u}, cube_dim{8});
  }
  EXPECT_TRUE(names->names().empty());
  EXPECT_EQ(client.read(values), std::vector<int>(8, 0));
}

TYPED_TEST_P(backend_launches, RejectsACubeDimOverTheDeviceLimitBeforeReporting) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  auto names = std::make_shared<testing::recording_observer>();
  launch_observation watching{names};
  try {
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{1u << 20});
    FAIL() << "a cube of 2^20 units was accepted";
  } catch (const invalid_launch& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("cube_dim"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("fill"));
  }
  EXPECT_TRUE(names->names().empty());
}

TYPED_TEST_P(backend_launches, RejectsMoreUnitsPerCubeThanTheDeviceAllowsBeforeReporting) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  auto names = std::make_shared<testing::recording_observer>();
  launch_observation watching{names};
  // Each axis within its own limit (1024, 1024, 64), the product over 1024.
  EXPECT_THROW(client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{64u, 64u, 1u}),
               invalid_launch);
  EXPECT_TRUE(names->names().empty());
}

TYPED_TEST_P(backend_launches, RejectsABufferOfAnotherDeviceBeforeReporting) {
  launchwatch::client& client = this->client();
  launchwatch::client other = TypeParam::other_device();
  auto foreign = other.template empty<int>(8);
  auto names = std::make_shared<testing::recording_observer>();
  launch_observation watching{names};
  try {
    client.launch(fill{foreign.view(), 1}, cube_count{1}, cube_dim{8});
    FAIL() << "a buffer of another device was accepted";
  } catch (const invalid_launch& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr(std::string{other.backend()} + ":" +
                                                   std::to_string(other.device_index())));
  }
  EXPECT_TRUE(names->names().empty());
  EXPECT_EQ(other.read(foreign), std::vector<int>(8, 0));
}

TYPED_TEST_P(backend_launches, RejectsASpanOfADestroyedBufferBeforeReporting) {
  launchwatch::client& client = this->client();
  device_span<int> dangling;
  {
    auto gone = client.template empty<int>(8);
    dangling = gone.view();
  }
  auto names = std::make_shared<testing::recording_observer>();
  launch_observation watching{names};
  EXPECT_THROW(client.launch(fill{dangling, 1}, cube_count{1}, cube_dim{8}), invalid_launch);
  EXPECT_TRUE(names->names().empty());
}

TYPED_TEST_P(backend_launches, RejectsASpanReachingPastItsBufferBeforeReporting) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  const auto view = values.view();
  const device_span<int> too_long{view.data() + 4, 8, view.owner()};
  auto names = std::make_shared<testing::recording_observer>();
  launch_observation watching{names};
  EXPECT_THROW(client.launch(fill{too_long, 1}, cube_count{1}, cube_dim{8}), invalid_launch);
  EXPECT_TRUE(names->names().empty());
}

// ---------------------------------------------------------------------------------------------
// Step 6: failures.

TYPED_TEST_P(backend_launches, AKernelFailureSurfacesAtTheNextSyncNamingTheKernel) {
  launchwatch::client& client = this->client();
  auto out = client.template empty<int>(64);
  client.launch(fail_at{out.view(), 3}, cube_count{1}, cube_dim{64});
  try {
    client.sync();
    FAIL() << "a failed kernel went unreported";
  } catch (const kernel_failure& failure) {
    EXPECT_EQ(failure.kernel(), type_name<fail_at>());
    EXPECT_THAT(failure.what(), ::testing::HasSubstr("fail_at"));
  }
  if constexpr (TypeParam::recovers_from_kernel_failure) {
    EXPECT_NO_THROW(client.sync()) << "a failure was reported twice";
    auto values = client.template empty<int>(8);
    client.launch(fill{values.view(), 9}, cube_count{1}, cube_dim{8});
    EXPECT_EQ(client.read(values), std::vector<int>(8, 9)) << "the stream did not recover";
  }
}

TYPED_TEST_P(backend_launches, AKernelFailureSurfacesAtTheReadOfItsBuffer) {
  launchwatch::client& client = this->client();
  auto out = client.template empty<int>(64);
  client.launch(fail_at{out.view(), 0}, cube_count{1}, cube_dim{64});
  EXPECT_THROW((void)client.read(out), kernel_failure);
}

REGISTER_TYPED_TEST_SUITE_P(backend_launches,
    RunsTheDesignExampleAxpy,
    RunsEveryUnitOfAThreeAxisGridOnceAtItsAbsolutePosition,
    RunsOneStreamsLaunchesInIssueOrder,
    AnEmptyGridLaunchesAndReportsNothing,
    RejectsACubeDimOverTheDeviceLimitBeforeReporting,
    RejectsMoreUnitsPerCubeThanTheDeviceAllowsBeforeReporting,
    RejectsABufferOfAnotherDeviceBeforeReporting,
    RejectsASpanOfADestroyedBufferBeforeReporting,
    RejectsASpanReachingPastItsBufferBeforeReporting,
    AKernelFailureSurfacesAtTheNextSyncNamingTheKernel,
    AKernelFailureSurfacesAtTheReadOfItsBuffer);

}  // namespace launchwatch::conformance
