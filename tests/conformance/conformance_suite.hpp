// The backend conformance suite: every behaviour of the runtime's launch path (DESIGN.md §2-§3),
// written once and run unchanged on every backend.
//
// A backend runs it by defining a fixture type and instantiating the suites for it, in a test file
// of its own (compiled by nvcc for CUDA, so the kernels of conformance_kernels.hpp are instantiated
// for the GPU):
//
//     struct my_backend {
//       // Empty when the backend can run here; otherwise why not, and every test skips with it.
//       static std::optional<std::string> unavailable();
//       // A client of the backend's device 0. Called after unavailable() said it can run.
//       static launchwatch::client make_client();
//       // A client of a different device, of any backend, whose buffers a launch on make_client()'s
//       // device must reject (CPU: client::cpu(1); CUDA: a CPU device works as well as a second GPU).
//       static launchwatch::client other_device();
//       // Whether a stream goes on working after one of its kernels failed. CUDA's device faults
//       // are sticky (the context is lost), so there the suite checks only that the failure is
//       // reported, naming the kernel.
//       static constexpr bool recovers_from_kernel_failure = true;
//     };
//     INSTANTIATE_TYPED_TEST_SUITE_P(my, backend_conformance, my_backend);
//     INSTANTIATE_TYPED_TEST_SUITE_P(my, backend_concurrency, my_backend);  // label `concurrency`
//
// (A binary that instantiates only one of the two suites says so of the other with
// GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST, as cpu_conformance_test.cpp does.)
//
// Each ctest test runs in its own process, so a test that sets the profiling logger, installs an
// observer or poisons a GPU context leaves nothing behind for the next.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/dry_run.hpp>
#include <launchwatch/logger.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/runtime/client.hpp>

#include "conformance/conformance_kernels.hpp"
#include "support/capturing_sink.hpp"
#include "support/observers.hpp"

namespace launchwatch::conformance {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// Observers the suite installs.

/// Keeps everything it is told about each launch: the launch_info, the thread it was told on, and
/// whether that thread was in a dry run at the time.
class info_recorder : public launch_observer {
 public:
  struct seen {
    launch_info info;
    std::thread::id thread;
    bool dry_run;
  };

  void launched(std::string_view) override {}
  void launched_with(const launch_info& info) override {
    std::lock_guard lock{mutex_};
    seen_.push_back(seen{info, std::this_thread::get_id(), launchwatch::dry_run()});
  }
  std::vector<seen> all() const {
    std::lock_guard lock{mutex_};
    return seen_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<seen> seen_;
};

/// Counts launches, from any number of threads.
class counter : public launch_observer {
 public:
  void launched(std::string_view) override { count_.fetch_add(1, std::memory_order_relaxed); }
  std::size_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::size_t> count_{0};
};

/// Answers `deferred` the first time it is asked, and `none` after: an observer that broke the rule
/// that its answer is constant. The launch path asks once per launch, so what it answered then is
/// what its launch gets.
class fickle : public testing::keeper {
 public:
  timing_request timing() const override {
    asked_.fetch_add(1);
    return asked_.load() > 1 ? timing_request::none : timing_request::deferred;
  }
  int asked() const { return asked_.load(); }

 private:
  mutable std::atomic<int> asked_{0};
};

/// Throws from `launched`.
class thrower : public launch_observer {
 public:
  void launched(std::string_view) override { throw std::runtime_error{"observer broke"}; }
};

/// Puts the profiling logger back as a fresh process has it, on every way out of a test.
struct logger_reset {
  logger_reset() = default;
  logger_reset(const logger_reset&) = delete;
  logger_reset& operator=(const logger_reset&) = delete;
  ~logger_reset() { detail::reset_profiling_logger_for_testing(); }
};

// ---------------------------------------------------------------------------------------------
// Fixtures.

template <class Backend>
class backend_conformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = Backend::unavailable()) GTEST_SKIP() << *why;
    client_.emplace(Backend::make_client());
  }

  launchwatch::client& client() { return *client_; }

  std::optional<launchwatch::client> client_;
};

template <class Backend>
class backend_concurrency : public backend_conformance<Backend> {};

TYPED_TEST_SUITE_P(backend_conformance);
TYPED_TEST_SUITE_P(backend_concurrency);

// ---------------------------------------------------------------------------------------------
// Running kernels.

TYPED_TEST_P(backend_conformance, RunsTheDesignExampleAxpy) {
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

TYPED_TEST_P(backend_conformance, RunsEveryUnitOfAThreeAxisGridOnceAtItsAbsolutePosition) {
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

TYPED_TEST_P(backend_conformance, RunsOneStreamsLaunchesInIssueOrder) {
  launchwatch::client& client = this->client();
  auto values = client.create<int>(std::vector<int>(64, 1));
  // (1 + 1) * 2 + 1 = 5 in this order; any other order gives another number.
  client.launch(add_one{values.view()}, cube_count{1}, cube_dim{64});
  client.launch(twice{values.view()}, cube_count{1}, cube_dim{64});
  client.launch(add_one{values.view()}, cube_count{1}, cube_dim{64});
  EXPECT_EQ(client.read(values), std::vector<int>(64, 5));
}

TYPED_TEST_P(backend_conformance, CreatesBuffersFromRangesAndEmptyBuffersAsZeros) {
  launchwatch::client& client = this->client();
  const std::array<int, 4> from_array{1, 2, 3, 4};
  EXPECT_EQ(client.read(client.create(from_array)), std::vector<int>({1, 2, 3, 4}));
  EXPECT_EQ(client.read(client.create<int>({5, 6})), std::vector<int>({5, 6}));
  EXPECT_EQ(client.read(client.empty<int>(3)), std::vector<int>(3, 0));
  EXPECT_TRUE(client.read(client.empty<int>(0)).empty());
}

TYPED_TEST_P(backend_conformance, AViewOfPartOfABufferReachesOnlyThatPart) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(10);
  client.launch(fill{values.view(2, 3), 7}, cube_count{1}, cube_dim{32});
  EXPECT_EQ(client.read(values), std::vector<int>({0, 0, 7, 7, 7, 0, 0, 0, 0, 0}));
}

TYPED_TEST_P(backend_conformance, AViewOfARangeOutsideTheBufferThrowsOutOfRange) {
  auto values = this->client().template empty<int>(10);
  EXPECT_THROW((void)values.view(8, 3), std::out_of_range);
  EXPECT_THROW((void)values.view(11, 0), std::out_of_range);
  EXPECT_NO_THROW((void)values.view(10, 0));
}

// ---------------------------------------------------------------------------------------------
// Steps 1 and 2 of the launch path: an empty grid, a bad configuration.

TYPED_TEST_P(backend_conformance, AnEmptyGridLaunchesAndReportsNothing) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  auto names = std::make_shared<testing::recorder>();
  {
    launch_observation watching{names};
    client.launch(fill{values.view(), 1}, cube_count{0}, cube_dim{8});
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8u, 0u});
    client.launch(fill{values.view(), 1}, cube_count{1u, 1u, 0u}, cube_dim{8});
  }
  EXPECT_TRUE(names->names().empty());
  EXPECT_EQ(client.read(values), std::vector<int>(8, 0));
}

TYPED_TEST_P(backend_conformance, RejectsACubeDimOverTheDeviceLimitBeforeReporting) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  auto names = std::make_shared<testing::recorder>();
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

TYPED_TEST_P(backend_conformance, RejectsMoreUnitsPerCubeThanTheDeviceAllowsBeforeReporting) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  auto names = std::make_shared<testing::recorder>();
  launch_observation watching{names};
  // Each axis within its own limit (1024, 1024, 64), the product over 1024.
  EXPECT_THROW(client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{64u, 64u, 1u}),
               invalid_launch);
  EXPECT_TRUE(names->names().empty());
}

TYPED_TEST_P(backend_conformance, RejectsABufferOfAnotherDeviceBeforeReporting) {
  launchwatch::client& client = this->client();
  launchwatch::client other = TypeParam::other_device();
  auto foreign = other.template empty<int>(8);
  auto names = std::make_shared<testing::recorder>();
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

TYPED_TEST_P(backend_conformance, RejectsASpanOfADestroyedBufferBeforeReporting) {
  launchwatch::client& client = this->client();
  device_span<int> dangling;
  {
    auto gone = client.template empty<int>(8);
    dangling = gone.view();
  }
  auto names = std::make_shared<testing::recorder>();
  launch_observation watching{names};
  EXPECT_THROW(client.launch(fill{dangling, 1}, cube_count{1}, cube_dim{8}), invalid_launch);
  EXPECT_TRUE(names->names().empty());
}

TYPED_TEST_P(backend_conformance, RejectsASpanReachingPastItsBufferBeforeReporting) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  const auto view = values.view();
  const device_span<int> too_long{view.data() + 4, 8, view.owner()};
  auto names = std::make_shared<testing::recorder>();
  launch_observation watching{names};
  EXPECT_THROW(client.launch(fill{too_long, 1}, cube_count{1}, cube_dim{8}), invalid_launch);
  EXPECT_TRUE(names->names().empty());
}

TYPED_TEST_P(backend_conformance, ReadingABufferOfAnotherDeviceIsRejected) {
  launchwatch::client other = TypeParam::other_device();
  auto foreign = other.template empty<int>(4);
  EXPECT_THROW((void)this->client().read(foreign), invalid_launch);
}

// ---------------------------------------------------------------------------------------------
// Step 4: reporting.

TYPED_TEST_P(backend_conformance, ReportsEachLaunchOnTheIssuingThreadInIssueOrder) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(8);
  auto seen = std::make_shared<info_recorder>();
  {
    launch_observation watching{seen};
    client.launch(fill{values.view(), 1}, cube_count{1}, cube_dim{8});
    client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
    client.launch(twice{values.view()}, cube_count{1}, cube_dim{8});
  }
  const auto all = seen->all();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].info.kernel, type_name<fill>());
  EXPECT_EQ(all[1].info.kernel, type_name<add_one>());
  EXPECT_EQ(all[2].info.kernel, type_name<twice>());
  for (const auto& s : all) EXPECT_EQ(s.thread, std::this_thread::get_id());
}

TYPED_TEST_P(backend_conformance, ReportsTheKernelsNameToANameOnlyObserver) {
  launchwatch::client& client = this->client();
  auto names = std::make_shared<testing::recorder>();
  {
    launch_observation watching{names};
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
  }
  EXPECT_EQ(names->names(), std::vector<std::string>{std::string{type_name<nothing>()}});
}

TYPED_TEST_P(backend_conformance, ReportsWhereALaunchRunsAndItsGrid) {
  launchwatch::client& client = this->client();
  auto values = client.empty<int>(64);
  auto seen = std::make_shared<info_recorder>();
  {
    launch_observation watching{seen};
    client.launch(fill{values.view(), 1}, cube_count{2u, 3u, 1u}, cube_dim{4u, 2u, 1u});
  }
  const auto all = seen->all();
  ASSERT_EQ(all.size(), 1u);
  const auto& info = all[0].info;
  EXPECT_EQ(info.backend, client.backend());
  EXPECT_EQ(info.device, client.device_index());
  EXPECT_EQ(info.stream, client.stream_id());
  EXPECT_EQ(info.cube_count, (std::array<std::uint32_t, 3>{2, 3, 1}));
  EXPECT_EQ(info.cube_dim, (std::array<std::uint32_t, 3>{4, 2, 1}));
  EXPECT_FALSE(info.dry_run);
  EXPECT_FALSE(info.capturing);
}

TYPED_TEST_P(backend_conformance, AThrowingObserverDoesNotStopTheLaunch) {
  launchwatch::client& client = this->client();
  testing::captured_log log;
  auto values = client.empty<int>(8);
  {
    launch_observation watching{std::make_shared<thrower>()};
    client.launch(fill{values.view(), 3}, cube_count{1}, cube_dim{8});
    client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
  }
  EXPECT_EQ(client.read(values), std::vector<int>(8, 4));
  EXPECT_EQ(log->count_containing("threw"), 1u);
}

// ---------------------------------------------------------------------------------------------
// Step 5: timing.

TYPED_TEST_P(backend_conformance, AnObserverThatAsksNoTimingIsNeverHandedAMeasurement) {
  launchwatch::client& client = this->client();
  // A keeper that asks for nothing: were a launch bracketed anyway, profiled would see it.
  class keeps_nothing : public testing::keeper {
    timing_request timing() const override { return timing_request::none; }
  };
  auto observer = std::make_shared<keeps_nothing>();
  {
    launch_observation watching{observer};
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
    client.sync();
  }
  EXPECT_TRUE(observer->take().empty());
  EXPECT_TRUE(observer->calls().empty());
}

TYPED_TEST_P(backend_conformance, DeferredTimingHandsOverAnUnreadDeviceMeasurementRightAfterTheLaunch) {
  launchwatch::client& client = this->client();
  auto keeps = std::make_shared<testing::keeper>();
  auto done = client.template empty<int>(1);
  {
    launch_observation watching{keeps};
    client.launch(spin{5'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
    auto kept = keeps->take();  // Before any sync: handed over on this thread, during the launch.
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].first, type_name<spin>());
    EXPECT_EQ(kept[0].second.method(), timing_method::device);
    const auto ticks = std::move(kept[0].second).resolve();
    ASSERT_TRUE(ticks.has_value());
    EXPECT_GE(ticks->length(), 4ms);  // The kernel spun 5 ms; device clocks are not that coarse.
  }
  EXPECT_TRUE(keeps->calls().empty()) << "a deferred observer was told `timed` with the logger off";
}

TYPED_TEST_P(backend_conformance, DeferredTimingDoesNotWaitForTheKernel) {
  launchwatch::client& client = this->client();
  auto keeps = std::make_shared<testing::keeper>();
  auto done = client.template empty<int>(1);
  instant returned;
  {
    launch_observation watching{keeps};
    client.launch(spin{200'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
    returned = std::chrono::steady_clock::now();
  }
  auto kept = keeps->take();
  ASSERT_EQ(kept.size(), 1u);
  const auto ticks = std::move(kept[0].second).resolve();
  ASSERT_TRUE(ticks.has_value());
  // The kernel ended long after the launch returned: nothing waited for it.
  EXPECT_GT(ticks->end(), returned + 100ms);
}

TYPED_TEST_P(backend_conformance, DeferredMeasurementsOfOneStreamLieInIssueOrderOnOneClock) {
  launchwatch::client& client = this->client();
  auto keeps = std::make_shared<testing::keeper>();
  auto done = client.template empty<int>(1);
  {
    launch_observation watching{keeps};
    for (int i = 0; i < 4; ++i) {
      client.launch(spin{1'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
    }
  }
  auto kept = keeps->take();
  ASSERT_EQ(kept.size(), 4u);
  std::vector<profile_ticks> ticks;
  for (auto& [name, profile] : kept) {
    auto read = std::move(profile).resolve();
    ASSERT_TRUE(read.has_value());
    ticks.push_back(*read);
  }
  for (std::size_t i = 1; i < ticks.size(); ++i) {
    EXPECT_GE(ticks[i].start(), ticks[i - 1].end()) << "launch " << i << " started before "
                                                    << i - 1 << " ended";
  }
}

TYPED_TEST_P(backend_conformance, ResolvedTimingTellsTimedBeforeTheLaunchReturns) {
  launchwatch::client& client = this->client();
  auto times = std::make_shared<testing::timer>(timing_request::resolved);
  auto done = client.template empty<int>(1);
  launch_observation watching{times};
  client.launch(spin{2'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
  const auto calls = times->calls();  // No sync: resolved timing waited for the kernel.
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(std::get<0>(calls[0]), type_name<spin>());
  EXPECT_GE(std::get<1>(calls[0]), 1ms);
  EXPECT_EQ(std::get<2>(calls[0]), timing_method::device);
}

TYPED_TEST_P(backend_conformance, TimingIsAskedOncePerLaunchAndThatAnswerDecidesItsMeasurement) {
  launchwatch::client& client = this->client();
  testing::captured_log log;
  auto observer = std::make_shared<fickle>();
  {
    launch_observation watching{observer};
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
  }
  EXPECT_EQ(observer->asked(), 1) << "timing() asked more than once for one launch";
  EXPECT_EQ(observer->take().size(), 1u) << "the launch was bracketed under `deferred`";
  EXPECT_EQ(log->count_containing("Dropped a timing"), 0u);
}

TYPED_TEST_P(backend_conformance, TheLoggerPastExecutionOnlyReadsEachMeasurementAndTellsADeferredObserverTimed) {
  launchwatch::client& client = this->client();
  testing::captured_log log;
  std::ostringstream out;
  const logger_reset reset_after;  // Destroyed before `out`, which the logger writes to.
  auto& logger = profiling_logger::instance();
  logger.set_output(log_output::stream(out));
  logger.set_level(profile_level::medium);
  auto keeps = std::make_shared<testing::keeper>();
  auto done = client.template empty<int>(1);
  {
    launch_observation watching{keeps};
    client.launch(spin{1'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
    client.launch(spin{1'000'000ull, done.view()}, cube_count{1}, cube_dim{1});
  }
  client.sync();
  logger.flush();
  EXPECT_TRUE(keeps->take().empty()) << "a deferred observer kept a measurement the logger read";
  const auto calls = keeps->calls();
  ASSERT_EQ(calls.size(), 2u);
  for (const auto& call : calls) {
    EXPECT_EQ(std::get<0>(call), type_name<spin>());
    EXPECT_EQ(std::get<2>(call), timing_method::device);
  }
  EXPECT_EQ(log->count_containing("profiling logger is reading every launch"), 1u);
  EXPECT_THAT(out.str(), ::testing::HasSubstr("spin"));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("(device)"));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("profile summary")) << "sync wrote no summary";
}

TYPED_TEST_P(backend_conformance, TheLoggerAtExecutionOnlyWritesALinePerLaunchAndTimesNothing) {
  launchwatch::client& client = this->client();
  std::ostringstream out;
  const logger_reset reset_after;  // Destroyed before `out`, which the logger writes to.
  auto& logger = profiling_logger::instance();
  logger.set_output(log_output::stream(out));
  logger.set_level(profile_level::execution_only);
  auto names = std::make_shared<testing::recorder>();
  {
    launch_observation watching{names};
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
  }
  client.sync();
  logger.flush();
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_THAT(text, ::testing::HasSubstr("nothing"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("took")));
  EXPECT_EQ(names->names().size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// Step 6: failures.

TYPED_TEST_P(backend_conformance, AKernelFailureSurfacesAtTheNextSyncNamingTheKernel) {
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

TYPED_TEST_P(backend_conformance, AKernelFailureSurfacesAtTheReadOfItsBuffer) {
  launchwatch::client& client = this->client();
  auto out = client.template empty<int>(64);
  client.launch(fail_at{out.view(), 0}, cube_count{1}, cube_dim{64});
  EXPECT_THROW((void)client.read(out), kernel_failure);
}

// ---------------------------------------------------------------------------------------------
// Dry runs.

TYPED_TEST_P(backend_conformance, ADryRunValidatesReportsAndLeavesBuffersUntouched) {
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

TYPED_TEST_P(backend_conformance, ARealRunScopeExecutesInsideADryRun) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  {
    dry_run_scope dry;
    real_run_scope real;
    client.launch(fill{values.view(), 4}, cube_count{1}, cube_dim{8});
  }
  EXPECT_EQ(client.read(values), std::vector<int>(8, 4));
}

TYPED_TEST_P(backend_conformance, ADryRunTimedLaunchIsMeasuredOnTheHost) {
  launchwatch::client& client = this->client();
  auto times = std::make_shared<testing::timer>(timing_request::resolved);
  {
    launch_observation watching{times};
    dry_run_scope dry;
    client.launch(nothing{}, cube_count{1}, cube_dim{1});
  }
  const auto calls = times->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(std::get<2>(calls[0]), timing_method::system);
}

// ---------------------------------------------------------------------------------------------
// Graphs.

TYPED_TEST_P(backend_conformance, ACaptureRecordsAndReportsLaunchesWithoutRunningThem) {
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

TYPED_TEST_P(backend_conformance, AReplayRunsEveryRecordedLaunchAndIsNotReported) {
  launchwatch::client& client = this->client();
  auto values = client.template empty<int>(8);
  graph recorded = client.capture([&] {
    client.launch(add_one{values.view()}, cube_count{1}, cube_dim{8});
    client.launch(twice{values.view()}, cube_count{1}, cube_dim{8});
  });
  auto names = std::make_shared<testing::recorder>();
  {
    launch_observation watching{names};
    recorded.replay();  // (0 + 1) * 2 = 2
    recorded.replay();  // (2 + 1) * 2 = 6
  }
  EXPECT_EQ(client.read(values), std::vector<int>(8, 6));
  EXPECT_TRUE(names->names().empty());
}

TYPED_TEST_P(backend_conformance, BeginAndEndCaptureRecordLikeCapture) {
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

TYPED_TEST_P(backend_conformance, ReadsAndSyncsOnACapturingStreamAreRefused) {
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

TYPED_TEST_P(backend_conformance, AProfileInACaptureWindowIsRefusedWithAWarningAndTheLaunchStillRecorded) {
  launchwatch::client& client = this->client();
  testing::captured_log log;
  auto keeps = std::make_shared<testing::keeper>();
  auto values = client.template empty<int>(8);
  graph recorded;
  {
    launch_observation watching{keeps};
    recorded = client.capture([&] {
      client.launch(fill{values.view(), 8}, cube_count{1}, cube_dim{8});
    });
  }
  EXPECT_TRUE(keeps->take().empty());
  EXPECT_EQ(log->count_containing("Skipped timing a launch of"), 1u);
  ASSERT_EQ(recorded.size(), 1u);
  recorded.replay();
  EXPECT_EQ(client.read(values), std::vector<int>(8, 8));
}

TYPED_TEST_P(backend_conformance, ACaptureWhoseFunctionThrowsIsAbandoned) {
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

TYPED_TEST_P(backend_conformance, CapturesDoNotNestAndEndNeedsABeginning) {
  launchwatch::client& client = this->client();
  EXPECT_THROW((void)client.end_capture(), capture_error);
  client.begin_capture();
  EXPECT_THROW(client.begin_capture(), capture_error);
  (void)client.end_capture();
}

TYPED_TEST_P(backend_conformance, AGraphKeepsTheBuffersItReferencesAlive) {
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

// ---------------------------------------------------------------------------------------------
// Streams and reads.

TYPED_TEST_P(backend_conformance, AReadWaitsOnlyForTheLaunchesThatReferencedItsBuffer) {
  launchwatch::client slow = this->client().pinned();
  launchwatch::client fast = this->client().pinned();
  auto slow_done = slow.template empty<int>(1);
  auto values = fast.template empty<int>(8);
  auto keeps = std::make_shared<testing::keeper>();
  std::optional<profile_duration> slow_window;
  {
    launch_observation watching{keeps};
    slow.launch(spin{1'000'000'000ull, slow_done.view()}, cube_count{1}, cube_dim{1});
    slow_window.emplace(std::move(keeps->take().at(0).second));
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

TYPED_TEST_P(backend_conformance, AReadWaitsForEveryStreamThatWroteItsBuffer) {
  launchwatch::client writer = this->client().pinned();
  launchwatch::client reader = this->client().pinned();
  auto values = writer.template empty<int>(8);
  writer.launch(spin{20'000'000ull, device_span<int>{}}, cube_count{1}, cube_dim{1});
  writer.launch(fill{values.view(), 6}, cube_count{1}, cube_dim{8});
  EXPECT_EQ(reader.read(values), std::vector<int>(8, 6));
}

TYPED_TEST_P(backend_conformance, ABufferDestroyedUnderAPendingLaunchIsFreedAfterIt) {
  launchwatch::client& client = this->client();
  {
    auto scratch = client.template empty<int>(1 << 16);
    client.launch(spin{20'000'000ull, device_span<int>{}}, cube_count{1}, cube_dim{1});
    client.launch(fill{scratch.view(), 1}, cube_count{64}, cube_dim{1024});
  }  // The fill is still queued behind the spin: freeing now would be a use after free.
  EXPECT_NO_THROW(client.sync());
}

TYPED_TEST_P(backend_conformance, EachThreadLaunchesOnAStreamOfItsOwnAndAPinnedClientOnOne) {
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

// ---------------------------------------------------------------------------------------------
// Concurrency (ctest label `concurrency`; must pass under TSan).

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
  auto keeps = std::make_shared<testing::keeper>();
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
  auto kept = keeps->take();
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

REGISTER_TYPED_TEST_SUITE_P(
    backend_conformance, RunsTheDesignExampleAxpy,
    RunsEveryUnitOfAThreeAxisGridOnceAtItsAbsolutePosition, RunsOneStreamsLaunchesInIssueOrder,
    CreatesBuffersFromRangesAndEmptyBuffersAsZeros, AViewOfPartOfABufferReachesOnlyThatPart,
    AViewOfARangeOutsideTheBufferThrowsOutOfRange, AnEmptyGridLaunchesAndReportsNothing,
    RejectsACubeDimOverTheDeviceLimitBeforeReporting,
    RejectsMoreUnitsPerCubeThanTheDeviceAllowsBeforeReporting,
    RejectsABufferOfAnotherDeviceBeforeReporting, RejectsASpanOfADestroyedBufferBeforeReporting,
    RejectsASpanReachingPastItsBufferBeforeReporting, ReadingABufferOfAnotherDeviceIsRejected,
    ReportsEachLaunchOnTheIssuingThreadInIssueOrder, ReportsTheKernelsNameToANameOnlyObserver,
    ReportsWhereALaunchRunsAndItsGrid, AThrowingObserverDoesNotStopTheLaunch,
    AnObserverThatAsksNoTimingIsNeverHandedAMeasurement,
    DeferredTimingHandsOverAnUnreadDeviceMeasurementRightAfterTheLaunch,
    DeferredTimingDoesNotWaitForTheKernel, DeferredMeasurementsOfOneStreamLieInIssueOrderOnOneClock,
    ResolvedTimingTellsTimedBeforeTheLaunchReturns,
    TimingIsAskedOncePerLaunchAndThatAnswerDecidesItsMeasurement,
    TheLoggerPastExecutionOnlyReadsEachMeasurementAndTellsADeferredObserverTimed,
    TheLoggerAtExecutionOnlyWritesALinePerLaunchAndTimesNothing,
    AKernelFailureSurfacesAtTheNextSyncNamingTheKernel, AKernelFailureSurfacesAtTheReadOfItsBuffer,
    ADryRunValidatesReportsAndLeavesBuffersUntouched, ARealRunScopeExecutesInsideADryRun,
    ADryRunTimedLaunchIsMeasuredOnTheHost, ACaptureRecordsAndReportsLaunchesWithoutRunningThem,
    AReplayRunsEveryRecordedLaunchAndIsNotReported, BeginAndEndCaptureRecordLikeCapture,
    ReadsAndSyncsOnACapturingStreamAreRefused,
    AProfileInACaptureWindowIsRefusedWithAWarningAndTheLaunchStillRecorded,
    ACaptureWhoseFunctionThrowsIsAbandoned, CapturesDoNotNestAndEndNeedsABeginning,
    AGraphKeepsTheBuffersItReferencesAlive, AReadWaitsOnlyForTheLaunchesThatReferencedItsBuffer,
    AReadWaitsForEveryStreamThatWroteItsBuffer, ABufferDestroyedUnderAPendingLaunchIsFreedAfterIt,
    EachThreadLaunchesOnAStreamOfItsOwnAndAPinnedClientOnOne);

REGISTER_TYPED_TEST_SUITE_P(backend_concurrency,
                            ThreadsLaunchingOnTheirOwnStreamsAtOnceEachSeeTheirOwnResults,
                            ThreadsTimingTheirLaunchesAtOnceEachGetTheirOwnMeasurements,
                            ThreadsSharingAPinnedStreamSeeTheirOwnLaunchesInTheirReads,
                            ACaptureOnOneThreadDoesNotRecordAnotherThreadsLaunches);

}  // namespace launchwatch::conformance
