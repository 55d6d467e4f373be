// The CUDA bridge's core on the CPU: CUPTI's callbacks and records, played by a fake CUPTI
// (fake_cupti.hpp), through launchwatch's own launch path to observers installed the normal way.
// Runs in every build, CI included; the same decisions on a GPU are tested in cuda_bridge_test.cu.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/observe.hpp>

#include <launchwatch/launch_path.hpp>
#include "fake_cupti.hpp"
#include "support/capturing_sink.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using testing::captured_log;
using testing::fake_cupti;

/// What the recording observer was told of one launch.
struct reported_launch {
  std::string kernel;
  bool capturing = false;
  std::uint64_t launch_id = 0;
  std::thread::id thread;
  /// Launches the fake had submitted when this one was reported.
  std::uint64_t submitted_before = 0;
};

/// Records launched_with, keeps profiled measurements unread, and records replayed nodes.
class recording_observer final : public launch_observer, public graph_replay_observer {
 public:
  recording_observer(const fake_cupti& cupti, timing_request timing)
      : cupti_{cupti}, timing_{timing} {}

  void launched(std::string_view) override {}
  void launched_with(const launch_info& info) override {
    std::lock_guard lock{mutex_};
    launches_.push_back(reported_launch{std::string{info.kernel}, info.capturing, info.launch_id,
                                        std::this_thread::get_id(), cupti_.submitted()});
  }
  timing_request timing() const override { return timing_; }
  void profiled(std::string_view kernel, profile_duration profile) override {
    std::lock_guard lock{mutex_};
    profiles_.emplace_back(std::string{kernel}, std::move(profile));
  }
  void timed(std::string_view kernel, std::chrono::nanoseconds length, timing_method) override {
    std::lock_guard lock{mutex_};
    timed_.emplace_back(std::string{kernel}, length);
  }
  void replayed(const replayed_node& node) override {
    std::this_thread::sleep_for(replay_delay_);
    std::lock_guard lock{mutex_};
    replayed_.push_back(node);
  }
  /// Each replayed node takes `delay` to be told (set before the observation is installed).
  void slow_replays(std::chrono::milliseconds delay) { replay_delay_ = delay; }

  std::vector<reported_launch> launches() {
    std::lock_guard lock{mutex_};
    return launches_;
  }
  std::vector<std::pair<std::string, profile_duration>> take_profiles() {
    std::lock_guard lock{mutex_};
    return std::exchange(profiles_, {});
  }
  std::vector<std::pair<std::string, std::chrono::nanoseconds>> timed_calls() {
    std::lock_guard lock{mutex_};
    return timed_;
  }
  std::vector<replayed_node> replayed_nodes() {
    std::lock_guard lock{mutex_};
    return replayed_;
  }

 private:
  const fake_cupti& cupti_;
  const timing_request timing_;
  std::mutex mutex_;
  std::vector<reported_launch> launches_;
  std::vector<std::pair<std::string, profile_duration>> profiles_;
  std::vector<std::pair<std::string, std::chrono::nanoseconds>> timed_;
  std::vector<replayed_node> replayed_;
  std::chrono::milliseconds replay_delay_{0};
};

cuda_bridge_options per_node() {
  cuda_bridge_options options;
  options.graph_replays = cuda_graph_replays::per_node;
  return options;
}

/// Captures one launch of `attention` on stream 7 and instantiates the graph: its executable.
const void* captured_attention(fake_cupti& cupti) {
  cupti.begin_capture(fake_cupti::stream(7));
  cupti.launch("attention");
  return cupti.instantiate(cupti.end_capture(fake_cupti::stream(7)));
}

// ---- ENTER/EXIT pairing ----

TEST(BridgeCore, ALaunchIsReportedOnceOnTheIssuingThreadBeforeItIsSubmitted) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  std::thread::id issuing;
  std::thread program{[&] {
    issuing = std::this_thread::get_id();
    cupti.launch("_Z6axpy_kPf");
  }};
  program.join();

  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].kernel, "axpy_k(float*)");
  EXPECT_EQ(launches[0].thread, issuing);
  EXPECT_EQ(launches[0].submitted_before, 0u);
  EXPECT_FALSE(launches[0].capturing);
  EXPECT_EQ(cupti.core().stats().launches_reported, 1u);
}

// ---- kernel names ----

TEST(BridgeCore, ABridgeThatHearsOfUnloadsReadsANamesTextAgainOnlyAfterAModuleUnloads) {
  fake_cupti cupti;
  cupti.core().every_unload_seen();
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  char name[] = "_Z3onev";  // the driver's memory behind CUPTI's symbolName
  cupti.launch(name);
  std::copy_n("_Z3twov", sizeof name, name);  // written without an unload: the pointer is trusted
  cupti.launch(name);
  fake_cupti::core_type::symbols_may_move();  // a module unloads; its address is reused
  cupti.launch(name);

  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].kernel, "one()");
  EXPECT_EQ(launches[1].kernel, "one()");
  EXPECT_EQ(launches[2].kernel, "two()");
}

TEST(BridgeCore, AKernelNodesNameFromTheDriverIsReadAgainThoughTheBridgeHearsOfUnloads) {
  fake_cupti cupti;
  cupti.core().every_unload_seen();
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  // cuFuncGetName's memory: a library's, which cuLibraryUnload frees with no callback.
  char name[] = "_Z3onev";
  const std::uint64_t graph = cupti.new_graph();
  (void)cupti.add_kernel_node(graph, name);
  std::copy_n("_Z3twov", sizeof name, name);
  (void)cupti.add_kernel_node(graph, name);

  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].kernel, "one()");
  EXPECT_EQ(launches[1].kernel, "two()");
}

TEST(BridgeCore, ABridgeThatMayMissUnloadsReadsTheTextOfEveryCachedName) {
  fake_cupti cupti;  // never told every_unload_seen(): the unload callbacks could not be turned on
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  char name[] = "_Z3onev";
  cupti.launch(name);
  std::copy_n("_Z3twov", sizeof name, name);
  cupti.launch(name);

  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].kernel, "one()");
  EXPECT_EQ(launches[1].kernel, "two()");
}

TEST(BridgeCore, ANewBridgeReadsTheNamesItsThreadCachedUnderAnEarlierOne) {
  char name[] = "_Z3onev";
  {
    fake_cupti earlier;
    earlier.core().every_unload_seen();
    auto observer = std::make_shared<recording_observer>(earlier, timing_request::none);
    launch_observation watching{observer};
    earlier.launch(name);
  }
  std::copy_n("_Z3twov", sizeof name, name);  // unloaded while no bridge heard of it
  fake_cupti later;
  later.core().every_unload_seen();
  auto observer = std::make_shared<recording_observer>(later, timing_request::none);
  launch_observation watching{observer};
  later.launch(name);

  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].kernel, "two()");
}

TEST(BridgeCore, ABridgeThatSawEveryCaptureBeginAsksTheDriverAboutALaunchOnlyWhileOneIsOpen) {
  fake_cupti cupti;
  cupti.core().every_capture_seen();  // as when made inside cuInit
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  cupti.launch("before", fake_cupti::stream(7));
  EXPECT_EQ(cupti.capture_questions(), 0u) << "no capture in progress: none to ask about";

  cupti.begin_capture(fake_cupti::stream(8));
  cupti.launch("beside", fake_cupti::stream(7));
  cupti.launch("inside", fake_cupti::stream(8));
  EXPECT_EQ(cupti.capture_questions(), 2u) << "while a capture is open, each launch is asked about";
  (void)cupti.end_capture(fake_cupti::stream(8));
  cupti.launch("after", fake_cupti::stream(8));
  EXPECT_EQ(cupti.capture_questions(), 2u);

  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 4u);
  EXPECT_FALSE(launches[0].capturing);
  EXPECT_FALSE(launches[1].capturing) << "another stream's capture is not this one's";
  EXPECT_TRUE(launches[2].capturing);
  EXPECT_FALSE(launches[3].capturing);
}

TEST(BridgeCore, ABridgeThatMayHaveMissedACaptureBeginAsksTheDriverAboutEveryLaunch) {
  // Made after the program started (not inside cuInit): a capture may have begun before it, and
  // its launches must still be known as captured.
  fake_cupti cupti;
  cupti.begin_capture(fake_cupti::stream(8));
  cupti.core().capture_ended(reinterpret_cast<std::uintptr_t>(fake_cupti::stream(8)));  // unseen
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  cupti.launch("outside", fake_cupti::stream(7));
  cupti.launch("inside", fake_cupti::stream(8));
  EXPECT_EQ(cupti.capture_questions(), 2u);
  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_FALSE(launches[0].capturing);
  EXPECT_TRUE(launches[1].capturing) << "a capture the bridge did not see begin";
  (void)cupti.end_capture(fake_cupti::stream(8));
}

TEST(BridgeCore, AResolvedLaunchIsTimedAtItsExitWithTheWindowItsEnterOpened) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::resolved);
  launch_observation watching{observer};
  cupti.launch("gemm");
  const auto timed = observer->timed_calls();
  ASSERT_EQ(timed.size(), 1u);
  EXPECT_EQ(timed[0].first, "gemm");
  EXPECT_EQ(timed[0].second, fake_cupti::resolved_length);
}

TEST(BridgeCore, ADeferredLaunchHandsOverAMeasurementThatResolvesFromItsKernelRecord) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  cupti.launch("gemm", fake_cupti::stream(7), 12us);
  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), 1u);
  const std::optional<profile_ticks> ticks = std::move(profiles[0].second).resolve();
  ASSERT_TRUE(ticks.has_value());
  EXPECT_EQ(ticks->length(), 12us);
  EXPECT_EQ(cupti.core().stats().measurements_delivered, 1u);
}

TEST(BridgeCore, AnExitOfAnotherLaunchDoesNotCloseTheOpenOne) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::resolved);
  launch_observation watching{observer};
  detail::cuda_bridge::launch_call enter;
  enter.correlation = 41;
  enter.symbol = "gemm";
  enter.context = fake_cupti::context;
  cupti.core().launch_entered(enter);
  detail::cuda_bridge::launch_call stranger = enter;
  stranger.correlation = 40;
  cupti.core().launch_exited(stranger);
  EXPECT_TRUE(observer->timed_calls().empty());
  EXPECT_TRUE(fake_cupti::core_type::wants_launch_exit());
  cupti.core().launch_exited(enter);
  EXPECT_EQ(observer->timed_calls().size(), 1u);
  EXPECT_FALSE(fake_cupti::core_type::wants_launch_exit());
}

TEST(BridgeCore, ALaunchLaunchwatchsOwnBackendReportedIsSkipped) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  {
    launch_path::reported_here own;
    cupti.launch("launchwatch_own_kernel");
  }
  cupti.launch("foreign_kernel");
  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].kernel, "foreign_kernel");
  EXPECT_EQ(cupti.core().stats().own_launches_skipped, 1u);
  EXPECT_EQ(observer->take_profiles().size(), 1u);
}

// ---- stream capture ----

TEST(BridgeCore, ALaunchInsideAStreamCaptureIsReportedAsRecordedIntoAGraphAndItsProfileRefused) {
  captured_log log;
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  cupti.begin_capture(fake_cupti::stream(7));
  cupti.launch("attention");
  (void)cupti.end_capture(fake_cupti::stream(7));

  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_TRUE(launches[0].capturing);
  EXPECT_TRUE(observer->take_profiles().empty());
  EXPECT_EQ(log->count_containing(std::string{launch_path::capture_refusal}), 1u);
}

// ---- graph replays ----

TEST(BridgeCore, GraphReplaysChargeEachNodeToTheScopeItsCaptureTimeLaunchHad) {
  fake_cupti cupti{per_node()};
  attribution_options options;
  options.timing = timing_request::deferred;
  auto observer = std::make_shared<attribution>(options);
  {
    launch_observation watching{observer};
    cupti.begin_capture(fake_cupti::stream(7));
    {
      scope decode{"decode"};
      cupti.launch("attention");
    }
    {
      scope mlp{"mlp"};
      cupti.launch("gemm");
    }
    const void* exec = cupti.instantiate(cupti.end_capture(fake_cupti::stream(7)));
    {
      scope elsewhere{"elsewhere"};
      cupti.replay(exec, fake_cupti::stream(7), 3us);
    }
    cupti.core().deliver_pending(2s);
  }
  const auto pass = observer->collect();
  std::vector<std::pair<std::string, std::string>> replayed;
  for (const auto& launch : pass.launches) {
    if (!launch.replayed) continue;
    ASSERT_TRUE(launch.scope.has_value());
    ASSERT_TRUE(launch.timing.has_value());
    EXPECT_EQ(launch.timing->length, 3us);
    replayed.emplace_back(pass.kernels.at(launch.kernel), pass.scope_path_text(*launch.scope));
  }
  using kernel_in_scope = std::pair<std::string, std::string>;
  EXPECT_THAT(replayed, ::testing::UnorderedElementsAre(kernel_in_scope{"attention", "decode"},
                                                        kernel_in_scope{"gemm", "mlp"}));
  EXPECT_EQ(cupti.core().stats().replayed_nodes_delivered, 2u);
}

TEST(BridgeCore, EachReplayTellsItsNodesWithTheCaptureTimeLaunchIdAndItsOwnReplayNumber) {
  fake_cupti cupti{per_node()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  const void* exec = captured_attention(cupti);
  cupti.replay(exec);
  cupti.replay(exec);
  cupti.core().deliver_pending(2s);

  const auto captured = observer->launches();
  ASSERT_EQ(captured.size(), 1u);
  const auto nodes = observer->replayed_nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].captured_launch, captured[0].launch_id);
  EXPECT_EQ(nodes[1].captured_launch, captured[0].launch_id);
  EXPECT_EQ(nodes[0].kernel, "attention");
  EXPECT_NE(nodes[0].replay, nodes[1].replay);
}

// ---- late and missing records ----

TEST(BridgeCore, ALateRecordIsDeliveredToTheObservationItBelongsToAndNotToANewerOne) {
  fake_cupti cupti;
  auto first = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  auto newer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  std::vector<std::pair<std::string, profile_duration>> kept;
  std::uint32_t late = 0;
  {
    launch_observation watching{first};
    late = cupti.next_correlation();
    cupti.withhold(late);  // the kernel is still running when the observation ends
    cupti.launch("slow", fake_cupti::stream(7), 40us);
    kept = first->take_profiles();
  }
  launch_observation watching{newer};
  cupti.launch("fast", fake_cupti::stream(7), 2us);
  cupti.release(late);

  ASSERT_EQ(kept.size(), 1u);
  const auto ticks = std::move(kept[0].second).resolve();
  ASSERT_TRUE(ticks.has_value());
  EXPECT_EQ(ticks->length(), 40us);
  auto newer_profiles = newer->take_profiles();
  ASSERT_EQ(newer_profiles.size(), 1u);
  EXPECT_EQ(newer_profiles[0].first, "fast");
  EXPECT_EQ(std::move(newer_profiles[0].second).resolve()->length(), 2us);
}

TEST(BridgeCore, ALateReplayRecordIsToldToTheObservationOfItsReplay) {
  fake_cupti cupti{per_node()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  const void* exec = captured_attention(cupti);
  const std::uint32_t replay = cupti.next_correlation();
  cupti.withhold(replay);
  cupti.replay(exec);
  cupti.launch("after", fake_cupti::stream(8));  // later work whose records come first
  cupti.core().deliver_pending(20ms);
  EXPECT_TRUE(observer->replayed_nodes().empty());
  cupti.release(replay);
  cupti.core().deliver_pending(2s);
  const auto nodes = observer->replayed_nodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].kernel, "attention");
}

TEST(BridgeCore, DeliveringPendingRecordsWaitsForAReplayedNodeBeingToldOnTheCollectorsThread) {
  fake_cupti cupti{per_node()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  observer->slow_replays(100ms);
  launch_observation watching{observer};
  cupti.replay(captured_attention(cupti));
  // The collector flushes every 10 ms while a replay is pending: by now its flush brought the
  // record, settled the replay and is telling the node.
  std::this_thread::sleep_for(30ms);
  cupti.core().deliver_pending(2s);
  EXPECT_EQ(observer->replayed_nodes().size(), 1u);
}

TEST(BridgeCore, ALateReplayRecordIsNotToldToAnObservationNewerThanItsReplay) {
  fake_cupti cupti{per_node()};
  auto first = std::make_shared<recording_observer>(cupti, timing_request::none);
  auto newer = std::make_shared<recording_observer>(cupti, timing_request::none);
  std::uint32_t replay = 0;
  {
    launch_observation watching{first};
    const void* exec = captured_attention(cupti);
    replay = cupti.next_correlation();
    cupti.withhold(replay);
    cupti.replay(exec);
  }
  launch_observation watching{newer};
  cupti.release(replay);
  cupti.core().deliver_pending(2s);
  EXPECT_TRUE(first->replayed_nodes().empty());  // its observation ended before the record came
  EXPECT_TRUE(newer->replayed_nodes().empty());
  EXPECT_EQ(cupti.core().stats().replayed_nodes_delivered, 0u);
}

TEST(BridgeCore, AMissingRecordIsCountedLostAndItsReadReturnsEmptyAfterTheTimeout) {
  captured_log log;
  cuda_bridge_options options;
  options.record_timeout = 50ms;
  fake_cupti cupti{options};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  cupti.lose(cupti.next_correlation());
  cupti.launch("lost");
  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), 1u);
  const auto began = std::chrono::steady_clock::now();
  EXPECT_FALSE(std::move(profiles[0].second).resolve().has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);
  EXPECT_EQ(cupti.core().stats().measurements_missing, 1u);
  EXPECT_EQ(cupti.core().stats().measurements_delivered, 0u);
  EXPECT_EQ(log->count_containing("did not arrive in time"), 1u);
}

// Issue 23, finding 5: a hundred missing records cost their readers one timeout together (the
// first wait gives up every record awaited before it), not a hundred one after the other.
TEST(BridgeCore, ManyMissingRecordsCostTheirReadersOneTimeoutTogetherNotOneEach) {
  captured_log log;
  cuda_bridge_options options;
  options.record_timeout = 200ms;
  fake_cupti cupti{options};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  constexpr int lost = 100;
  for (int i = 0; i < lost; ++i) {
    cupti.lose(cupti.next_correlation());
    cupti.launch("lost");
  }
  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), static_cast<std::size_t>(lost));
  const auto began = std::chrono::steady_clock::now();
  for (auto& [kernel, profile] : profiles) EXPECT_FALSE(std::move(profile).resolve().has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3 * options.record_timeout);
  EXPECT_EQ(cupti.core().stats().measurements_missing, static_cast<std::uint64_t>(lost));
  EXPECT_EQ(log->count_containing("CUDA launch"), 1u) << "said once, with the count";
  EXPECT_EQ(log->count_containing("Gave up timing 100 CUDA launch(es)"), 1u);
}

TEST(BridgeCore, AFlushOfIdleDevicesThatBringsNothingGivesUpTheMissingRecordsAtOnce) {
  captured_log log;
  fake_cupti cupti;  // record_timeout 30 s
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  for (int i = 0; i < 100; ++i) {
    cupti.lose(cupti.next_correlation());
    cupti.launch("lost");
  }
  cupti.launch("arrives", fake_cupti::stream(7), 9us);
  const auto began = std::chrono::steady_clock::now();
  cupti.core().deliver_pending(2s);
  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), 101u);
  int timed = 0;
  for (auto& [kernel, profile] : profiles) {
    const auto ticks = std::move(profile).resolve();
    EXPECT_EQ(ticks.has_value(), kernel == "arrives");
    timed += ticks.has_value() ? 1 : 0;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - began, 1s);
  EXPECT_EQ(timed, 1);
  EXPECT_EQ(cupti.core().stats().measurements_missing, 100u);
  EXPECT_EQ(log->count_containing("were not handed over by a flush"), 1u);
  EXPECT_EQ(log->count_containing("CUDA launch"), 1u);
}

/// How many flushes the collector asks for in ten flush periods, once a flush it had begun ended.
std::uint64_t flushes_in_ten_periods(const fake_cupti& cupti) {
  std::this_thread::sleep_for(30ms);
  const std::uint64_t before = cupti.flushes();
  std::this_thread::sleep_for(100ms);
  return cupti.flushes() - before;
}

TEST(BridgeCore, AfterTheMissingRecordsAreGivenUpTheCollectorStopsFlushing) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  cupti.lose(cupti.next_correlation());
  cupti.launch("lost");
  cupti.core().deliver_pending(2s);
  EXPECT_EQ(flushes_in_ten_periods(cupti), 0u);
}

// ---- flushes and stream captures (U1: a device synchronisation invalidates another thread's
// ---- global-mode capture, settled on the H200) ----

TEST(BridgeCore, AFlushDuringAStreamCaptureDeliversTheRecordsWithoutWaitingForTheDevices) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  cupti.launch("before", fake_cupti::stream(7), 9us);
  cupti.begin_capture(fake_cupti::stream(8));
  int waits = 0;
  cupti.core().deliver_pending(2s, [&] { ++waits; });
  EXPECT_EQ(waits, 0) << "a device synchronisation would invalidate the capture";
  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), 1u);
  const auto began = std::chrono::steady_clock::now();
  const auto ticks = std::move(profiles[0].second).resolve();
  EXPECT_LT(std::chrono::steady_clock::now() - began, 50ms) << "delivered by the flush";
  ASSERT_TRUE(ticks.has_value());
  EXPECT_EQ(ticks->length(), 9us);
  (void)cupti.end_capture(fake_cupti::stream(8));
}

TEST(BridgeCore, AFlushAfterTheLastStreamCaptureEndedWaitsForTheDevicesAgain) {
  fake_cupti cupti;
  cupti.begin_capture(fake_cupti::stream(8));
  cupti.begin_capture(fake_cupti::stream(9));
  int waits = 0;
  (void)cupti.end_capture(fake_cupti::stream(8));
  cupti.core().deliver_pending(2s, [&] { ++waits; });
  EXPECT_EQ(waits, 0) << "stream 9 still captures";
  (void)cupti.end_capture(fake_cupti::stream(9));
  cupti.core().deliver_pending(2s, [&] { ++waits; });
  EXPECT_EQ(waits, 1);
}

TEST(BridgeCore, AFlushDuringAStreamCaptureGivesUpNoRecordOfAKernelThatMayStillRun) {
  fake_cupti cupti;  // record_timeout 30 s
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  const std::uint32_t running = cupti.next_correlation();
  cupti.withhold(running);
  cupti.launch("running", fake_cupti::stream(7), 13us);
  cupti.begin_capture(fake_cupti::stream(8));
  const auto began = std::chrono::steady_clock::now();
  cupti.core().deliver_pending(100ms, [] {});
  EXPECT_LT(std::chrono::steady_clock::now() - began, 1s) << "its patience, not the record's";
  EXPECT_EQ(cupti.core().stats().measurements_missing, 0u);
  cupti.release(running);  // the kernel ends after the flush
  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), 1u);
  const auto ticks = std::move(profiles[0].second).resolve();
  ASSERT_TRUE(ticks.has_value());
  EXPECT_EQ(ticks->length(), 13us);
  (void)cupti.end_capture(fake_cupti::stream(8));
}

/// A flush on a thread of its own whose wait for the devices lasts until devices_idle().
class flush_waiting_for_the_devices {
 public:
  explicit flush_waiting_for_the_devices(fake_cupti& cupti)
      : flushing_{[this, &cupti] {
          cupti.core().deliver_pending(2s, [this] {
            waiting_ = true;
            while (!idle_) std::this_thread::sleep_for(1ms);
          });
        }} {
    while (!waiting_) std::this_thread::yield();
  }
  ~flush_waiting_for_the_devices() { devices_idle(); }
  void devices_idle() {
    idle_ = true;
    if (flushing_.joinable()) flushing_.join();
  }

 private:
  std::atomic<bool> waiting_{false};
  std::atomic<bool> idle_{false};
  std::thread flushing_;
};

TEST(BridgeCore, ACaptureBeginningWhileTheBridgeWaitsForTheDevicesBeginsOnceTheWaitIsOver) {
  fake_cupti cupti;
  flush_waiting_for_the_devices flush{cupti};
  std::atomic<bool> begun{false};
  std::thread capturing{[&] {
    cupti.begin_capture(fake_cupti::stream(8));
    begun = true;
  }};
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(begun.load()) << "it began while the devices were being waited for";
  flush.devices_idle();
  capturing.join();
  EXPECT_TRUE(begun.load());
  (void)cupti.end_capture(fake_cupti::stream(8));
}

TEST(BridgeCore, ACaptureWaitsForTheBridgesWaitForTheDevicesAtMostTheRecordTimeout) {
  captured_log log;
  cuda_bridge_options options;
  options.record_timeout = 50ms;
  fake_cupti cupti{options};
  flush_waiting_for_the_devices flush{cupti};
  const auto began = std::chrono::steady_clock::now();
  cupti.begin_capture(fake_cupti::stream(8));  // a device that waits for this very thread
  const auto waited = std::chrono::steady_clock::now() - began;
  flush.devices_idle();
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 1s);
  EXPECT_EQ(log->count_containing("waited 50 ms for the CUDA bridge"), 1u);
  (void)cupti.end_capture(fake_cupti::stream(8));
}

TEST(BridgeCore, TheEndOfACaptureTheBridgeNeverSawBeginLeavesTheOthersInProgress) {
  fake_cupti cupti;
  cupti.begin_capture(fake_cupti::stream(8));
  cupti.core().capture_ended(9);  // stream 9's capture began before the bridge subscribed
  int waits = 0;
  cupti.core().deliver_pending(2s, [&] { ++waits; });
  EXPECT_EQ(waits, 0);
  (void)cupti.end_capture(fake_cupti::stream(8));
}

// ---- another CUPTI client in the process (issue 23) ----

/// Options whose record timeout is `timeout`.
cuda_bridge_options record_timeout_of(std::chrono::milliseconds timeout) {
  cuda_bridge_options options;
  options.record_timeout = timeout;
  return options;
}

/// Waits up to five seconds for the bridge to see CUPTI's records reach it again (it flushes once a
/// second while they are elsewhere).
bool records_back(fake_cupti& cupti) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (cupti.core().records()->holder().held_elsewhere()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(BridgeCore, RecordsTakenByAnotherClientMakeLaterLaunchesUntimedWithoutATimeoutEach) {
  captured_log log;
  fake_cupti cupti{record_timeout_of(50ms)};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  cupti.another_client_takes_records();
  for (int i = 0; i < 10; ++i) cupti.launch("before it was seen");
  auto first = observer->take_profiles();
  ASSERT_EQ(first.size(), 10u);
  EXPECT_FALSE(std::move(first[0].second).resolve().has_value());  // one timeout
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) cupti.launch("names only");
  cupti.core().deliver_pending(2s);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 500ms);
  EXPECT_EQ(observer->launches().size(), 110u) << "every launch is still reported";
  EXPECT_TRUE(observer->take_profiles().empty()) << "no measurement that would never resolve";
  const auto stats = cupti.core().stats();
  EXPECT_EQ(stats.untimed_records_elsewhere, 100u);
  EXPECT_EQ(stats.records_taken_windows, 1u);
  EXPECT_EQ(log->count_containing("stopped reaching launchwatch"), 1u);
}

TEST(BridgeCore, ARecordOfALaunchAfterTheRecordsStoppedComingBringsTheTimingBack) {
  fake_cupti cupti{record_timeout_of(50ms)};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  const std::uint32_t long_kernel = cupti.next_correlation();
  cupti.withhold(long_kernel);  // runs past the record timeout, holding its buffer
  cupti.launch("long");
  auto kept = observer->take_profiles();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_FALSE(std::move(kept[0].second).resolve().has_value());
  ASSERT_TRUE(cupti.core().records()->holder().held_elsewhere());
  cupti.launch("while it ran");  // untimed; its record is in the same buffer
  cupti.release(long_kernel);
  ASSERT_TRUE(records_back(cupti));
  cupti.launch("after", fake_cupti::stream(7), 17us);
  auto after = observer->take_profiles();
  ASSERT_EQ(after.size(), 1u);
  const auto ticks = std::move(after[0].second).resolve();
  ASSERT_TRUE(ticks.has_value());
  EXPECT_EQ(ticks->length(), 17us);
}

TEST(BridgeCore, RecordsTheProgramSaysAnotherClientTakesAreUntimedAtOnceUntilTheyAreReturned) {
  captured_log log;
  fake_cupti cupti;  // record_timeout 30 s: nothing may wait for it
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  cupti.core().records_taken_elsewhere();
  cupti.another_client_takes_records();
  const auto began = std::chrono::steady_clock::now();
  cupti.launch("profiled by the other client");
  cupti.core().deliver_pending(2s);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 500ms);
  EXPECT_TRUE(observer->take_profiles().empty());
  EXPECT_EQ(log->count_containing("takes CUPTI's kernel records now"), 1u);
  cupti.bridge_registers_again();
  cupti.core().records_returned();
  cupti.launch("timed again", fake_cupti::stream(7), 8us);
  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), 1u);
  const auto ticks = std::move(profiles[0].second).resolve();
  ASSERT_TRUE(ticks.has_value());
  EXPECT_EQ(ticks->length(), 8us);
  const auto stats = cupti.core().stats();
  EXPECT_EQ(stats.untimed_records_elsewhere, 1u);
  EXPECT_EQ(stats.records_taken_windows, 1u);
  EXPECT_GT(stats.records_taken_for.count(), 0);
}

TEST(BridgeCore, AReplayWhileAnotherClientHoldsTheRecordsWaitsForNone) {
  fake_cupti cupti{per_node()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  const void* exec = captured_attention(cupti);
  cupti.core().records_taken_elsewhere();
  cupti.another_client_takes_records();
  cupti.replay(exec);
  EXPECT_EQ(cupti.core().graph_tables().replays, 0u);
  const auto began = std::chrono::steady_clock::now();
  cupti.core().deliver_pending(2s);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 500ms);
  EXPECT_TRUE(observer->replayed_nodes().empty());
}

// ---- correlation ids over hours (finding 6) ----

/// Launches `symbol` for `length` at the correlation id `id` and lets the collector hand its
/// record over (it arrives long before the id comes round again, as on a real GPU).
std::uint32_t launch_at(fake_cupti& cupti, std::uint32_t id, const char* symbol,
                        std::chrono::nanoseconds length) {
  cupti.jump_correlation(id);
  const std::uint32_t correlation = cupti.launch(symbol, fake_cupti::stream(7), length);
  cupti.core().deliver_pending(2s);
  return correlation;
}

/// Launches at ids a quarter of the 32-bit range apart from `from` until the id is `from` again:
/// the calls of an hour or more, seen at their ENTERs.
void go_round_the_ids(fake_cupti& cupti, std::uint32_t from) {
  constexpr std::uint32_t quarter = std::uint32_t{1} << 30;
  for (std::uint32_t step = 1; step < 4; ++step) {
    launch_at(cupti, from + step * quarter, "between", 1us);
  }
}

TEST(BridgeCore, TwoLaunchesOfOne32BitCorrelationIdEachResolveTheirOwnWindow) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  constexpr std::uint32_t id = 0xfffffff0u;  // ids go round once between the two
  ASSERT_EQ(launch_at(cupti, id, "first", 11us), id);
  go_round_the_ids(cupti, id);
  ASSERT_EQ(launch_at(cupti, id, "second", 22us), id);

  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), 5u);
  ASSERT_EQ(profiles.front().first, "first");
  ASSERT_EQ(profiles.back().first, "second");
  const auto first = std::move(profiles.front().second).resolve();
  const auto second = std::move(profiles.back().second).resolve();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(first->length(), 11us);
  EXPECT_EQ(second->length(), 22us);
}

TEST(BridgeCore, LaunchIdsDoNotCollideAcrossTheCorrelationWrap) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  constexpr std::uint32_t id = 7;
  launch_at(cupti, id, "first", 1us);
  go_round_the_ids(cupti, id);
  launch_at(cupti, id, "second", 1us);
  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 5u);
  EXPECT_NE(launches.front().launch_id, launches.back().launch_id);
  EXPECT_EQ(launches.back().launch_id - launches.front().launch_id, std::uint64_t{1} << 32);
}

// ---- graph bookkeeping over hours (finding 9) ----

TEST(BridgeCore, CapturingReplayingAndDestroyingAThousandGraphsLeavesTheTablesFlat) {
  fake_cupti cupti{per_node()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  for (int step = 0; step < 1000; ++step) {
    cupti.begin_capture(fake_cupti::stream(7));
    cupti.launch("norm");
    cupti.launch("attention");
    cupti.launch("mlp");
    const std::uint64_t graph = cupti.end_capture(fake_cupti::stream(7));
    const void* exec = cupti.instantiate(graph);
    cupti.replay(exec);
    cupti.destroy_exec(exec);  // before its replay's records came: they still count
    cupti.destroy_graph(graph);
  }
  cupti.core().deliver_pending(2s);
  EXPECT_EQ(cupti.core().stats().replayed_nodes_delivered, 3000u);
  const auto tables = cupti.core().graph_tables();
  EXPECT_EQ(tables.nodes, 0u);
  EXPECT_EQ(tables.graphs, 0u);
  EXPECT_EQ(tables.execs, 0u);
  EXPECT_EQ(tables.replays, 0u);
}

TEST(BridgeCore, AReplayWhoseRecordsNameTheCapturedNodesIsToldAfterItsGraphAndExecAreDestroyed) {
  fake_cupti cupti{per_node()};
  cupti.records_name_captured_nodes();
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  for (int step = 0; step < 10; ++step) {
    cupti.begin_capture(fake_cupti::stream(7));
    cupti.launch("norm");
    cupti.launch("mlp");
    const std::uint64_t graph = cupti.end_capture(fake_cupti::stream(7));
    const void* exec = cupti.instantiate(graph);
    cupti.destroy_graph(graph);  // right after instantiating, as programs do
    cupti.replay(exec);
    cupti.destroy_exec(exec);  // before its replay's records came
  }
  cupti.core().deliver_pending(2s);
  EXPECT_EQ(cupti.core().stats().replayed_nodes_delivered, 20u);
  const auto tables = cupti.core().graph_tables();
  EXPECT_EQ(tables.nodes, 0u);
  EXPECT_EQ(tables.execs, 0u);
  EXPECT_EQ(tables.replays, 0u);
}

TEST(BridgeCore, AnExecutableGraphMadeAtADestroyedOnesAddressCountsAsNew) {
  fake_cupti cupti{per_node()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  const void* exec = captured_attention(cupti);
  cupti.replay(exec);
  cupti.core().deliver_pending(2s);
  cupti.destroy_exec(exec);
  cupti.begin_capture(fake_cupti::stream(7));
  cupti.launch("gemm");
  const void* again = cupti.instantiate(cupti.end_capture(fake_cupti::stream(7)), exec);
  ASSERT_EQ(again, exec);
  cupti.replay(again);
  cupti.core().deliver_pending(2s);
  const auto nodes = observer->replayed_nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1].kernel, "gemm");
  EXPECT_EQ(cupti.core().graph_tables().replays, 0u) << "the new exec's one node settles it";
}

TEST(BridgeCore, AReplayWhoseRecordWasDroppedIsGivenUpSoNothingStaysPending) {
  cuda_bridge_options options = per_node();
  options.record_timeout = 50ms;
  fake_cupti cupti{options};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  const void* exec = captured_attention(cupti);
  cupti.lose(cupti.next_correlation());
  cupti.replay(exec);
  ASSERT_EQ(cupti.core().graph_tables().replays, 1u);
  // Past the record timeout the collector gives it up, on its own thread: waited for up to 5 s,
  // so a loaded machine that runs the collector late does not fail the test.
  const auto given_up_by = std::chrono::steady_clock::now() + 5s;
  while (cupti.core().graph_tables().replays != 0 &&
         std::chrono::steady_clock::now() < given_up_by) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(cupti.core().graph_tables().replays, 0u);
  const auto began = std::chrono::steady_clock::now();
  cupti.core().deliver_pending(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 2s) << "nothing was left to wait for";
  EXPECT_TRUE(observer->replayed_nodes().empty());
}

// ---- the profiler API range (finding 10: a graph captured before cudaProfilerStart) ----

cuda_bridge_options per_node_in_the_profiler_range() {
  cuda_bridge_options options = per_node();
  options.capture_range = cuda_capture_range::cuda_profiler_api;
  return options;
}

TEST(BridgeCore, AGraphCapturedBeforeTheProfilerRangeHasEachReplayInsideItTold) {
  fake_cupti cupti{per_node_in_the_profiler_range()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  cupti.begin_capture(fake_cupti::stream(7));
  for (const char* kernel : {"norm", "attention", "mlp"}) cupti.launch(kernel);
  const void* exec = cupti.instantiate(cupti.end_capture(fake_cupti::stream(7)));
  cupti.core().profiler_started();
  for (int r = 0; r < 100; ++r) cupti.replay(exec);
  cupti.core().profiler_stopped();
  cupti.replay(exec);  // outside the range again
  cupti.core().deliver_pending(2s);
  EXPECT_TRUE(observer->launches().empty()) << "the capture was outside the range";
  const auto nodes = observer->replayed_nodes();
  ASSERT_EQ(nodes.size(), 300u);
  // Each of the 100 replays told its three nodes once. (Not in one order: the collector and the
  // flush of deliver_pending hand records over from two threads.)
  std::map<std::uint64_t, std::multiset<std::string>> kernels_of_replay;
  for (const auto& node : nodes) kernels_of_replay[node.replay].insert(std::string{node.kernel});
  EXPECT_EQ(kernels_of_replay.size(), 100u);
  for (const auto& [replay, kernels] : kernels_of_replay) {
    EXPECT_EQ(kernels, (std::multiset<std::string>{"attention", "mlp", "norm"})) << replay;
  }
  EXPECT_EQ(cupti.core().stats().outside_capture_range, 3u);
}

TEST(BridgeCore, AnExplicitGraphBuiltBeforeTheProfilerRangeHasEachReplayInsideItTold) {
  fake_cupti cupti{per_node_in_the_profiler_range()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  const std::uint64_t graph = cupti.new_graph();
  (void)cupti.add_kernel_node(graph, "gemm");
  const void* exec = cupti.instantiate(graph);
  cupti.core().profiler_started();
  for (int r = 0; r < 10; ++r) cupti.replay(exec);
  cupti.core().profiler_stopped();
  cupti.core().deliver_pending(2s);
  EXPECT_TRUE(observer->launches().empty());
  const auto nodes = observer->replayed_nodes();
  ASSERT_EQ(nodes.size(), 10u);
  EXPECT_EQ(nodes[0].kernel, "gemm");
}

TEST(BridgeCore, ALaunchOutsideTheProfilerRangeAfterACaptureOutsideItIsNotReported) {
  fake_cupti cupti{per_node_in_the_profiler_range()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  cupti.begin_capture(fake_cupti::stream(7));
  cupti.launch("captured");
  (void)cupti.end_capture(fake_cupti::stream(7));
  cupti.launch("plain");
  EXPECT_TRUE(observer->launches().empty());
  EXPECT_TRUE(observer->take_profiles().empty());
  EXPECT_EQ(cupti.core().stats().launches_reported, 0u);
}

// ---- kernel nodes of the explicit graph API (U3) ----

TEST(BridgeCore, AChildGraphNodesCopiedKernelsAreNotReportedAgain) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  const std::uint64_t child = cupti.new_graph();
  (void)cupti.add_kernel_node(child, "inner");
  const std::uint64_t parent = cupti.new_graph();
  cupti.add_child_graph_node(parent, child);
  const auto launches = observer->launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].kernel, "inner");
  EXPECT_TRUE(launches[0].capturing);
}

// ---- child graphs (issue 23: their kernels were missing from replays on the H200) ----

/// A graph of `head` then a child-graph node holding a capture of two `inner` launches on stream
/// 7; returns its executable and sets `inner_launches` to the capture-time launches' ids.
const void* graph_with_captured_child(fake_cupti& cupti, recording_observer& observer,
                                      std::vector<std::uint64_t>& inner_launches) {
  cupti.begin_capture(fake_cupti::stream(7));
  cupti.launch("inner");
  cupti.launch("inner");
  const std::uint64_t child = cupti.end_capture(fake_cupti::stream(7));
  for (const auto& launch : observer.launches()) inner_launches.push_back(launch.launch_id);
  const std::uint64_t parent = cupti.new_graph();
  (void)cupti.add_kernel_node(parent, "head");
  cupti.add_child_graph_node(parent, child);
  return cupti.instantiate(parent);
}

TEST(BridgeCore, EachReplayOfAChildGraphsKernelIsToldWithTheLaunchThatCapturedItsOriginal) {
  fake_cupti cupti{per_node()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  std::vector<std::uint64_t> inner;
  const void* exec = graph_with_captured_child(cupti, *observer, inner);
  ASSERT_EQ(inner.size(), 2u);
  cupti.replay(exec);
  cupti.replay(exec);
  cupti.core().deliver_pending(2s);
  std::multiset<std::uint64_t> inner_told;
  std::size_t heads = 0;
  for (const auto& node : observer->replayed_nodes()) {
    if (node.kernel == "inner") inner_told.insert(node.captured_launch);
    if (node.kernel == "head") ++heads;
  }
  EXPECT_EQ(heads, 2u);
  EXPECT_EQ(inner_told, (std::multiset<std::uint64_t>{inner[0], inner[0], inner[1], inner[1]}));
  EXPECT_EQ(cupti.core().stats().replayed_nodes_unmapped, 0u);
  EXPECT_EQ(cupti.core().graph_tables().replays, 0u) << "every replay's size was known";
}

TEST(BridgeCore, DestroyingAnExecutableGraphForgetsTheClonesOfItsChildGraphsNodesToo) {
  fake_cupti cupti{per_node()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  std::vector<std::uint64_t> inner;
  const void* exec = graph_with_captured_child(cupti, *observer, inner);
  // The clones CUPTI names in the child's own graph belong to the exec the instantiate made.
  EXPECT_EQ(cupti.core().graph_tables().execs, 1u);
  const std::size_t nodes_with_exec = cupti.core().graph_tables().nodes;
  cupti.replay(exec);
  cupti.core().deliver_pending(2s);
  cupti.destroy_exec(exec);
  EXPECT_EQ(cupti.core().graph_tables().execs, 0u);
  EXPECT_EQ(cupti.core().graph_tables().nodes, nodes_with_exec - 3) << "its three clones";
}

TEST(BridgeCore, AReplayedKernelWhoseNodeTheBridgeNeverSawMadeIsStillToldUnderItsRecordsName) {
  fake_cupti cupti{per_node()};
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::none);
  launch_observation watching{observer};
  cupti.announce_no_copies();
  std::vector<std::uint64_t> inner;
  const void* exec = graph_with_captured_child(cupti, *observer, inner);
  for (int r = 0; r < 3; ++r) cupti.replay(exec);
  cupti.core().deliver_pending(2s);
  std::size_t inner_told = 0;
  std::set<std::uint64_t> replays;
  for (const auto& node : observer->replayed_nodes()) {
    if (node.kernel != "inner") continue;
    ++inner_told;
    EXPECT_EQ(node.captured_launch, 0u) << "no launch is known to have recorded it";
    replays.insert(node.replay);
  }
  EXPECT_EQ(inner_told, 6u) << "each replay's two child kernels, after its one known node came";
  EXPECT_EQ(replays.size(), 3u);
  EXPECT_EQ(cupti.core().stats().replayed_nodes_delivered, 9u);
  EXPECT_EQ(cupti.core().stats().replayed_nodes_unmapped, 6u);
}

// ---- the end of a run (finding 13) ----

TEST(BridgeCore, ALaunchCaughtBetweenEnterAndExitWhenCallbacksTurnOffIsForgotten) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  detail::cuda_bridge::launch_call enter;
  enter.correlation = cupti.next_correlation();
  enter.symbol = "caught";
  enter.context = fake_cupti::context;
  cupti.core().launch_entered(enter);  // its EXIT never comes
  cupti.core().launch_callbacks_off();
  EXPECT_EQ(flushes_in_ten_periods(cupti), 0u) << "nothing is awaited any more";
  cupti.core().launch_exited(enter);  // an EXIT CUPTI had dispatched already
  EXPECT_TRUE(observer->take_profiles().empty());
}

TEST(BridgeCore, AClosedCoreStopsFlushingAndAnswersReadsAtOnce) {
  fake_cupti cupti;
  auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
  launch_observation watching{observer};
  cupti.withhold(cupti.next_correlation());
  cupti.launch("running");
  cupti.core().close();
  auto profiles = observer->take_profiles();
  ASSERT_EQ(profiles.size(), 1u);
  const auto began = std::chrono::steady_clock::now();
  EXPECT_FALSE(std::move(profiles[0].second).resolve().has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - began, 100ms);
  EXPECT_EQ(flushes_in_ten_periods(cupti), 0u);
}

TEST(BridgeCore, ARecordOfAKernelStillRunningAtCloseResolvesEmptyRatherThanZero) {
  captured_log log;
  std::vector<std::pair<std::string, profile_duration>> kept;
  {
    fake_cupti cupti;
    auto observer = std::make_shared<recording_observer>(cupti, timing_request::deferred);
    launch_observation watching{observer};
    cupti.withhold(cupti.next_correlation());
    cupti.launch("running");
    kept = observer->take_profiles();
  }  // the bridge closes: a forced flush hands the record over with no timestamps
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_FALSE(std::move(kept[0].second).resolve().has_value());
  EXPECT_EQ(log->count_containing("carried no timestamps"), 1u);
}

}  // namespace
}  // namespace launchwatch
