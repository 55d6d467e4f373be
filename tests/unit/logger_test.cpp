// The profiling logger: configuration from the environment, what each level writes, the summary
// table, and the background writer that keeps measurement and I/O off the launch path.

#include <launchwatch/logger.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <latch>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/capturing_sink.hpp"
#include "support/golden.hpp"
#include "support/thread_names.hpp"

namespace launchwatch {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

static_assert(!std::is_copy_constructible_v<profiling_logger>);
static_assert(!std::is_move_constructible_v<profiling_logger>);

profiling_logger& logger() { return profiling_logger::instance(); }

/// A fixed point on the timeline: the logger starts here in tests that compare exact text.
constexpr instant epoch{std::chrono::seconds{1000}};
instant fixed_clock() noexcept { return epoch; }

/// A measurement of the window [epoch + from, epoch + from + length], read without waiting.
profile_duration window(std::chrono::nanoseconds from, std::chrono::nanoseconds length,
                        timing_method method = timing_method::device) {
  const auto ticks = profile_ticks::from_start_end(epoch + from, epoch + from + length);
  return profile_duration{[ticks]() noexcept -> std::optional<profile_ticks> { return ticks; },
                          method};
}

profile_duration lasting(std::chrono::nanoseconds length,
                         timing_method method = timing_method::device) {
  return window(0ns, length, method);
}

/// A measurement whose read waits for `released` first, as a kernel that is still running does.
profile_duration pending_until(std::latch& released, std::chrono::nanoseconds length) {
  return profile_duration{[&released, length]() -> std::optional<profile_ticks> {
                            released.wait();
                            return profile_ticks::from_start_end(epoch, epoch + length);
                          },
                          timing_method::device};
}

launch_info launch(std::string_view kernel) {
  launch_info info;
  info.kernel = kernel;
  info.stream = 3;
  return info;
}

void set_environment(const char* name, const char* value) { ::setenv(name, value, 1); }

void clear_environment() {
  ::unsetenv("LAUNCHWATCH_PROFILE");
  ::unsetenv("LAUNCHWATCH_LOG");
}

/// A directory of its own under the system's temporary directory, removed afterwards.
class scratch_directory {
 public:
  scratch_directory() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            (std::string{"launchwatch_logger_"} + test->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~scratch_directory() { std::filesystem::remove_all(path_); }
  scratch_directory(const scratch_directory&) = delete;
  scratch_directory& operator=(const scratch_directory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The message of the configuration_error start() throws; fails the test, saying it accepted
/// `what`, when start() throws none.
std::string start_refusal(const char* what) {
  try {
    logger().start();
  } catch (const configuration_error& error) {
    return error.what();
  }
  ADD_FAILURE() << "start() accepted " << what;
  return {};
}

/// Configuration from the environment: no output set by code, so LAUNCHWATCH_LOG is read.
class ProfilingLoggerEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_environment();
    detail::reset_profiling_logger_for_testing();
  }
  void TearDown() override {
    detail::reset_profiling_logger_for_testing();
    clear_environment();
  }
};

/// What the logger writes, collected from a stream the test owns.
class ProfilingLogger : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_environment();
    detail::reset_profiling_logger_for_testing();
    detail::set_profiling_clock_for_testing(&fixed_clock);
    logger().set_output(log_output::stream(out_));
  }
  void TearDown() override {
    detail::reset_profiling_logger_for_testing();
    detail::set_profiling_clock_for_testing(nullptr);
    clear_environment();
  }

  /// Everything written so far, once the writer has caught up.
  std::string written() {
    logger().flush();
    return out_.str();
  }

  std::ostringstream out_;
};

// --- Configuration ------------------------------------------------------------------------------

TEST_F(ProfilingLoggerEnvironment, RejectsAnUnknownProfileLevelNamingTheVariableTheValueAndTheAcceptedValues) {
  set_environment("LAUNCHWATCH_PROFILE", "verbose");
  EXPECT_THAT(start_refusal("LAUNCHWATCH_PROFILE=verbose"),
              AllOf(HasSubstr("LAUNCHWATCH_PROFILE"), HasSubstr("`verbose`"),
                    HasSubstr("disabled, minimal, basic, medium, full")));
}

TEST_F(ProfilingLoggerEnvironment, AFailedStartChangesNothingAndTheNextStartThrowsAgain) {
  set_environment("LAUNCHWATCH_PROFILE", "Full");
  EXPECT_THROW(logger().start(), configuration_error);
  EXPECT_EQ(logger().level(), profile_level::disabled);
  EXPECT_THROW(logger().start(), configuration_error) << "a second client must not run unlogged";
}

TEST_F(ProfilingLoggerEnvironment, ReadsEachLevelByItsName) {
  const std::pair<const char*, profile_level> names[] = {
      {"disabled", profile_level::disabled}, {"basic", profile_level::basic},
      {"medium", profile_level::medium},     {"full", profile_level::full}};
  for (const auto& [name, level] : names) {
    detail::reset_profiling_logger_for_testing();
    set_environment("LAUNCHWATCH_PROFILE", name);
    logger().start();
    EXPECT_EQ(logger().level(), level) << name;
  }
}

TEST_F(ProfilingLoggerEnvironment, MinimalMeansExecutionOnly) {
  set_environment("LAUNCHWATCH_PROFILE", "minimal");
  logger().start();
  EXPECT_EQ(logger().level(), profile_level::execution_only);
}

TEST_F(ProfilingLoggerEnvironment, AnEmptyVariableKeepsTheLoggerDisabled) {
  set_environment("LAUNCHWATCH_PROFILE", "");
  set_environment("LAUNCHWATCH_LOG", "");
  logger().start();
  EXPECT_EQ(logger().level(), profile_level::disabled);
}

TEST_F(ProfilingLoggerEnvironment, ALevelSetInCodeWinsOverTheEnvironment) {
  logger().set_level(profile_level::basic);
  set_environment("LAUNCHWATCH_PROFILE", "full");
  logger().start();
  EXPECT_EQ(logger().level(), profile_level::basic);
}

TEST_F(ProfilingLoggerEnvironment, ALevelSetInCodeWinsEvenOverABadValue) {
  logger().set_level(profile_level::medium);
  set_environment("LAUNCHWATCH_PROFILE", "verbose");
  EXPECT_NO_THROW(logger().start()) << "the variable is not consulted when code decided";
  EXPECT_EQ(logger().level(), profile_level::medium);
}

TEST_F(ProfilingLoggerEnvironment, TheEnvironmentIsReadOnlyByTheFirstStart) {
  set_environment("LAUNCHWATCH_PROFILE", "basic");
  logger().start();
  set_environment("LAUNCHWATCH_PROFILE", "full");
  logger().start();
  EXPECT_EQ(logger().level(), profile_level::basic);
}

TEST_F(ProfilingLoggerEnvironment, RejectsALogFileInADirectoryThatDoesNotExist) {
  scratch_directory scratch;
  const auto path = scratch.path() / "missing" / "profile.log";
  set_environment("LAUNCHWATCH_PROFILE", "medium");
  set_environment("LAUNCHWATCH_LOG", path.c_str());
  EXPECT_THAT(start_refusal("a log file in a directory that does not exist"),
              AllOf(HasSubstr("LAUNCHWATCH_LOG"), HasSubstr(path.string()),
                    HasSubstr("does not exist"), HasSubstr("stderr, stdout")));
  EXPECT_FALSE(std::filesystem::exists(path.parent_path())) << "a typo must not become a directory";
  EXPECT_EQ(logger().level(), profile_level::disabled);
}

TEST_F(ProfilingLoggerEnvironment, RejectsALogPathThatCannotBeOpenedForWriting) {
  scratch_directory scratch;  // a directory: not a file anyone can append to, root included
  set_environment("LAUNCHWATCH_PROFILE", "basic");
  set_environment("LAUNCHWATCH_LOG", scratch.path().c_str());
  EXPECT_THAT(start_refusal("a directory as its log file"),
              AllOf(HasSubstr("LAUNCHWATCH_LOG"), HasSubstr(scratch.path().string()),
                    HasSubstr("it is a directory"), HasSubstr("stderr, stdout")));
}

TEST_F(ProfilingLoggerEnvironment, RejectsABadLogFileEvenWhileProfilingIsDisabled) {
  scratch_directory scratch;
  const auto path = scratch.path() / "missing" / "profile.log";
  set_environment("LAUNCHWATCH_LOG", path.c_str());
  EXPECT_THAT(start_refusal("a log file in a directory that does not exist"),
              AllOf(HasSubstr("LAUNCHWATCH_LOG"), HasSubstr(path.string())));
}

TEST_F(ProfilingLoggerEnvironment, ALogFileNotNeededWhileDisabledIsNotCreated) {
  scratch_directory scratch;
  const auto path = scratch.path() / "profile.log";
  set_environment("LAUNCHWATCH_LOG", path.c_str());
  logger().start();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(ProfilingLoggerEnvironment, ALogFileThatWentBadIsReportedWhenCodeTurnsTheLoggerOn) {
  scratch_directory scratch;
  const auto directory = scratch.path() / "logs";
  std::filesystem::create_directory(directory);
  set_environment("LAUNCHWATCH_LOG", (directory / "profile.log").c_str());
  logger().start();  // disabled: checked, nothing opened
  std::filesystem::remove(directory);
  EXPECT_THROW(logger().set_level(profile_level::medium), configuration_error);
  EXPECT_EQ(logger().level(), profile_level::disabled) << "the level must not change over a lost log";
}

TEST_F(ProfilingLoggerEnvironment, AppendsToTheFileNamedByTheEnvironment) {
  scratch_directory scratch;
  const auto path = scratch.path() / "profile.log";
  std::ofstream{path} << "an earlier run\n";
  set_environment("LAUNCHWATCH_PROFILE", "medium");
  set_environment("LAUNCHWATCH_LOG", path.c_str());
  logger().start();
  logger().record(launch("k"), window(0ns, 2us));
  logger().flush();
  EXPECT_EQ(read_file(path), "an earlier run\nlaunch k took 2.000 us (device)\n");
}

TEST_F(ProfilingLoggerEnvironment, AnOutputSetInCodeWinsOverTheEnvironment) {
  std::ostringstream out;
  logger().set_output(log_output::stream(out));
  struct stop_before_the_stream_goes {
    ~stop_before_the_stream_goes() { detail::reset_profiling_logger_for_testing(); }
  } stop;
  set_environment("LAUNCHWATCH_PROFILE", "medium");
  set_environment("LAUNCHWATCH_LOG", "/launchwatch/no/such/directory/profile.log");
  EXPECT_NO_THROW(logger().start());
  logger().record(launch("k"), lasting(2us));
  logger().flush();
  EXPECT_EQ(out.str(), "launch k took 2.000 us (device)\n");
}

TEST_F(ProfilingLoggerEnvironment, SetOutputRejectsAFileItCannotOpenNamingThePath) {
  scratch_directory scratch;
  const auto path = scratch.path() / "missing" / "profile.log";
  try {
    logger().set_output(log_output::file(path));
    FAIL() << "set_output accepted a file in a directory that does not exist";
  } catch (const configuration_error& error) {
    EXPECT_THAT(error.what(), AllOf(HasSubstr("set_output"), HasSubstr(path.string())));
  }
}

TEST_F(ProfilingLoggerEnvironment, SetLevelRejectsAValueOutsideTheEnumeration) {
  EXPECT_THROW(logger().set_level(static_cast<profile_level>(42)), configuration_error);
  EXPECT_EQ(logger().level(), profile_level::disabled);
}

// Fault table row 4: a directory the process may not write into. Root may create files in any
// directory whatever its mode, but not in /proc, so a run as root (CI's) names a file there.
TEST_F(ProfilingLoggerEnvironment, RejectsALogFileInADirectoryThisProcessMayNotWrite) {
  scratch_directory scratch;
  namespace fs = std::filesystem;
  fs::path path = "/proc/launchwatch-profile.log";
  if (::geteuid() != 0) {
    fs::permissions(scratch.path(), fs::perms::owner_read | fs::perms::owner_exec);
    path = scratch.path() / "profile.log";
  }
  set_environment("LAUNCHWATCH_PROFILE", "basic");
  set_environment("LAUNCHWATCH_LOG", path.c_str());
  EXPECT_THAT(start_refusal("a log file it may not create"),
              AllOf(HasSubstr("LAUNCHWATCH_LOG"), HasSubstr(path.string()),
                    HasSubstr("stderr, stdout")));
  EXPECT_EQ(logger().level(), profile_level::disabled);
  fs::permissions(scratch.path(), fs::perms::owner_all);
}

// --- What each level writes ---------------------------------------------------------------------

TEST_F(ProfilingLogger, DisabledWritesNothing) {
  logger().start();
  logger().record_execution(launch("k"));
  logger().record(launch("k"), lasting(1us));
  logger().write_summary();
  EXPECT_EQ(written(), "");
}

TEST_F(ProfilingLogger, ItsWriterThreadIsNamedLwLogForTheToolsThatWatchTheProcess) {
  if (testing::thread_names().empty()) GTEST_SKIP() << "no /proc/self/task here";
  logger().set_level(profile_level::execution_only);
  logger().start();
  logger().record_execution(launch("k"));
  EXPECT_EQ(written(), "launch k on cpu:0 stream 3\n");
  EXPECT_TRUE(testing::thread_named_within("lw-log"));
}

TEST_F(ProfilingLogger, ExecutionOnlyWritesALinePerLaunchWithoutTiming) {
  logger().set_level(profile_level::execution_only);
  logger().start();
  logger().record_execution(launch("demo::ops::matmul<float, 16>"));
  logger().record_execution(launch("softmax"));
  logger().write_summary();
  EXPECT_EQ(written(),
            "launch matmul | float | 16 on cpu:0 stream 3\n"
            "launch softmax on cpu:0 stream 3\n");
}

TEST_F(ProfilingLogger, ExecutionOnlyIgnoresMeasurements) {
  logger().set_level(profile_level::execution_only);
  logger().start();
  logger().record(launch("k"), lasting(1us));
  logger().write_summary();
  EXPECT_EQ(written(), "");
}

TEST_F(ProfilingLogger, BasicWritesOnlyTheSummary) {
  logger().set_level(profile_level::basic);
  logger().start();
  logger().record(launch("k"), lasting(1us));
  EXPECT_EQ(written(), "") << "no line per launch at basic";
  logger().write_summary();
  EXPECT_THAT(written(), AllOf(HasSubstr("profile summary (device timing): 1 launch, 1.00 us"),
                               Not(HasSubstr("launch k"))));
}

TEST_F(ProfilingLogger, RecordExecutionWritesNothingPastExecutionOnly) {
  logger().set_level(profile_level::medium);
  logger().start();
  logger().record_execution(launch("k"));
  EXPECT_EQ(written(), "") << "record() writes these launches; a second line would double them";
}

TEST_F(ProfilingLogger, MediumWritesALinePerLaunchWithItsBalancedNameAndDuration) {
  logger().set_level(profile_level::medium);
  logger().start();
  logger().record(launch("demo::ops::matmul<float, 16>"), lasting(1500us));
  logger().record(launch("demo::copy"), lasting(250ns, timing_method::system));
  EXPECT_EQ(written(),
            "launch matmul | float | 16 took 1.500 ms (device)\n"
            "launch copy took 250 ns (system)\n");
}

TEST_F(ProfilingLogger, FullWritesTheFullNameWhereItRanItsGridAndItsWindow) {
  logger().set_level(profile_level::full);
  logger().start();  // the clock says `epoch`: offsets are from there
  auto info = launch("demo::ops::matmul<float, 16>");
  info.device = 1;
  info.stream = 7;
  info.cube_count = {4, 2, 1};
  info.cube_dim = {256, 1, 1};
  logger().record(info, window(1ms, 1500us));
  EXPECT_EQ(written(),
            "launch demo::ops::matmul<float, 16> on cpu:1 stream 7 grid 4x2x1 cube 256x1x1 "
            "start +1.000000 ms end +2.500000 ms took 1.500 ms (device)\n");
}

TEST_F(ProfilingLogger, MarksLaunchesUnderADryRunOrInACaptureWindow) {
  logger().set_level(profile_level::execution_only);
  logger().start();
  auto dry = launch("dry");
  dry.dry_run = true;
  auto captured = launch("captured");
  captured.capturing = true;
  logger().record_execution(dry);
  logger().record_execution(captured);
  EXPECT_EQ(written(),
            "launch dry on cpu:0 stream 3 [dry run]\n"
            "launch captured on cpu:0 stream 3 [captured]\n");
}

TEST_F(ProfilingLogger, AReadingWithNoTicksIsShownAsUntimedNotZero) {
  logger().set_level(profile_level::medium);
  logger().start();
  logger().record(launch("k"),
                  profile_duration{[]() -> std::optional<profile_ticks> { return std::nullopt; },
                                   timing_method::device});
  logger().write_summary();
  EXPECT_EQ(written(),
            "launch k untimed (no measurement)\n"
            "untimed launches (no measurement): 1\n"
            "kernel  launches\n"
            "k              1\n");
}

TEST_F(ProfilingLogger, AReadingThatFailsIsShownAsUntimedWithTheReason) {
  logger().set_level(profile_level::medium);
  logger().start();
  logger().record(launch("k"), profile_duration{[]() -> std::optional<profile_ticks> {
                                                  throw std::runtime_error{"the kernel faulted"};
                                                },
                                                timing_method::device});
  EXPECT_EQ(written(), "launch k untimed (reading failed: the kernel faulted)\n");
}

// --- The summary --------------------------------------------------------------------------------

TEST_F(ProfilingLogger, TheSummaryIsSortedByTimeWithSharesSummingToAHundredPercentAndATotalRow) {
  logger().set_level(profile_level::basic);
  logger().start();
  logger().record(launch("softmax"), lasting(1ms));
  logger().record(launch("demo::ops::matmul<float, 16>"), lasting(1ms));
  logger().record(launch("layer_norm"), lasting(500us));
  logger().record(launch("demo::ops::matmul<float, 16>"), lasting(2ms));
  logger().record(launch("gelu"), lasting(500us));
  logger().write_summary();
  EXPECT_EQ(written(),
            "profile summary (device timing): 5 launches, 5.00 ms\n"
            "kernel               launches    total   share\n"
            "matmul | float | 16         2  3.00 ms   60.0%\n"
            "softmax                     1  1.00 ms   20.0%\n"
            "gelu                        1   500 us   10.0%\n"
            "layer_norm                  1   500 us   10.0%\n"
            "total                       5  5.00 ms  100.0%\n");
}

// Both tables of a summary and its untimed launches, drawn by the rules the attribution tree
// follows (tests/report/golden/tree.txt): three significant figures, shares adding up to 100.0%.
TEST_F(ProfilingLogger, TheSummaryMatchesTheGoldenFile) {
  logger().set_level(profile_level::basic);
  logger().start();
  logger().record(launch("demo::ops::matmul<float, 16>"), lasting(1200us));
  logger().record(launch("demo::ops::matmul<float, 16>"), lasting(1150us));
  logger().record(launch("demo::ops::softmax<float>"), lasting(333us));
  logger().record(launch("demo::ops::gelu<float>"), lasting(333us));
  logger().record(launch("demo::ops::layer_norm<float>"), lasting(333us));
  logger().record(launch("demo::copy"), lasting(41us, timing_method::system));
  logger().record(launch("demo::fill<int>"), lasting(7us, timing_method::system));
  logger().record(launch("demo::fill<int>"),
                  profile_duration{[]() -> std::optional<profile_ticks> { return std::nullopt; },
                                   timing_method::device});
  logger().write_summary();
  launchwatch::testing::expect_matches_golden("logger_summary.txt", written());
}

TEST_F(ProfilingLogger, SharesAreRoundedSoTheRowsAddUpToExactlyTheTotal) {
  logger().set_level(profile_level::basic);
  logger().start();
  for (const auto* kernel : {"a", "b", "c"}) logger().record(launch(kernel), lasting(1us));
  logger().write_summary();
  // 33.3% three times would be 99.9%: the largest remainder (the first, on a tie) takes the tenth.
  EXPECT_THAT(written(), AllOf(HasSubstr("\na              1  1.00 us   33.4%\n"),
                               HasSubstr("\nb              1  1.00 us   33.3%\n"),
                               HasSubstr("\nc              1  1.00 us   33.3%\n"),
                               HasSubstr("\ntotal          3  3.00 us  100.0%\n")));
}

TEST_F(ProfilingLogger, DeviceAndSystemTimesAreSummarisedApartNeverInOneTotal) {
  logger().set_level(profile_level::basic);
  logger().start();
  logger().record(launch("k"), lasting(3us, timing_method::device));
  logger().record(launch("k"), lasting(5us, timing_method::system));
  logger().write_summary();
  EXPECT_EQ(written(),
            "profile summary (device timing): 1 launch, 3.00 us\n"
            "kernel  launches    total   share\n"
            "k              1  3.00 us  100.0%\n"
            "total          1  3.00 us  100.0%\n"
            "profile summary (system timing): 1 launch, 5.00 us\n"
            "kernel  launches    total   share\n"
            "k              1  5.00 us  100.0%\n"
            "total          1  5.00 us  100.0%\n");
}

TEST_F(ProfilingLogger, TheFullSummaryNamesKernelsInFull) {
  logger().set_level(profile_level::full);
  logger().start();
  logger().record(launch("demo::ops::matmul<float, 16>"), window(0ns, 1us));
  const auto before = written();
  logger().write_summary();
  EXPECT_THAT(written().substr(before.size()),
              HasSubstr("\ndemo::ops::matmul<float, 16>         1  1.00 us  100.0%\n"));
}

TEST_F(ProfilingLogger, ASummaryCoversOnlyTheLaunchesSinceThePreviousOne) {
  logger().set_level(profile_level::basic);
  logger().start();
  logger().record(launch("first"), lasting(1us));
  logger().write_summary();
  const auto first = written();
  logger().record(launch("second"), lasting(2us));
  logger().write_summary();
  const auto second = written().substr(first.size());
  EXPECT_THAT(second, AllOf(HasSubstr("second"), Not(HasSubstr("first")),
                            HasSubstr("1 launch, 2.00 us")));
}

TEST_F(ProfilingLogger, ASummaryWithNoLaunchesSinceThePreviousOneWritesNothing) {
  logger().set_level(profile_level::basic);
  logger().start();
  logger().record(launch("k"), lasting(1us));
  logger().write_summary();
  const auto first = written();
  logger().write_summary();
  EXPECT_EQ(written(), first);
}

// --- The background writer ----------------------------------------------------------------------

TEST_F(ProfilingLogger, MeasurementsAreResolvedOnTheBackgroundThreadNotTheRecordingOne) {
  logger().set_level(profile_level::medium);
  logger().start();
  std::promise<std::thread::id> resolved_on;
  logger().record(launch("k"), profile_duration{[&]() -> std::optional<profile_ticks> {
                                                  resolved_on.set_value(std::this_thread::get_id());
                                                  return profile_ticks::from_start_end(epoch, epoch);
                                                },
                                                timing_method::device});
  auto reader = resolved_on.get_future();
  ASSERT_EQ(reader.wait_for(10s), std::future_status::ready) << "the measurement was never read";
  EXPECT_NE(reader.get(), std::this_thread::get_id());
}

TEST_F(ProfilingLogger, RecordNeverWaitsForASlowMeasurement) {
  logger().set_level(profile_level::medium);
  logger().start();
  std::latch kernel_done{1};
  auto recording = std::async(std::launch::async, [&] {
    logger().record(launch("slow"), pending_until(kernel_done, 1us));
    logger().record(launch("behind_it"), lasting(1us));
  });
  const bool returned = recording.wait_for(10s) == std::future_status::ready;
  kernel_done.count_down();
  EXPECT_TRUE(returned) << "record() waited for the measurement of a kernel still running";
  EXPECT_EQ(written(), "launch slow took 1.000 us (device)\nlaunch behind_it took 1.000 us (device)\n");
}

TEST_F(ProfilingLogger, WriteSummaryWaitsForTheRecordsQueuedBeforeIt) {
  logger().set_level(profile_level::basic);
  logger().start();
  std::latch kernels_done{1};
  for (int i = 0; i < 3; ++i) logger().record(launch("k"), pending_until(kernels_done, 1us));
  std::jthread finishing{[&] {
    std::this_thread::sleep_for(50ms);
    kernels_done.count_down();
  }};
  logger().write_summary();
  EXPECT_THAT(out_.str(), HasSubstr("3 launches, 3.00 us"))
      << "the summary was written before the launches queued ahead of it";
}

TEST_F(ProfilingLogger, LinesQueuedBeforeAnOutputChangeGoWhereTheyWereMeantTo) {
  logger().set_level(profile_level::medium);
  logger().start();
  std::latch kernel_done{1};
  logger().record(launch("before"), pending_until(kernel_done, 1us));
  std::ostringstream later;
  logger().set_output(log_output::stream(later));
  logger().record(launch("after"), lasting(1us));
  kernel_done.count_down();
  logger().flush();
  EXPECT_EQ(out_.str(), "launch before took 1.000 us (device)\n");
  EXPECT_EQ(later.str(), "launch after took 1.000 us (device)\n");
  detail::reset_profiling_logger_for_testing();  // before `later` goes
}

// Fault table row 4: a log file whose writes fail (a full disk) is said once, naming it, and the
// logger goes on: nothing waits, and lines sent to another output afterwards are all there.
TEST_F(ProfilingLogger, ALogFileWhoseWritesFailIsReportedOnceNamingItAndLoggingGoesOn) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "this system has no /dev/full";
  testing::captured_log log;
  logger().set_level(profile_level::medium);
  logger().start();
  logger().set_output(log_output::file("/dev/full"));
  for (int i = 0; i < 3; ++i) {
    logger().record(launch("lost"), lasting(1us));
    logger().write_summary();
  }
  logger().flush();
  EXPECT_EQ(log->count_containing("could not write to `/dev/full` (No space left on device)"), 1u);
  logger().set_output(log_output::stream(out_));
  logger().record(launch("kept"), lasting(1us));
  logger().flush();
  EXPECT_EQ(out_.str(), "launch kept took 1.000 us (device)\n");
}

// --- Exit -----------------------------------------------------------------------------------------

/// The process ends with work still queued: written to standard error by the exit handler.
class ProfilingLoggerAtExit : public ProfilingLoggerEnvironment {
 protected:
  void SetUp() override {
    ProfilingLoggerEnvironment::SetUp();
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(ProfilingLoggerAtExit, WritesWhatWasQueuedAndALastSummaryWithoutHanging) {
  EXPECT_EXIT(
      {
        logger().set_level(profile_level::medium);
        logger().start();
        static std::latch kernel_done{1};
        logger().record(launch("late"), pending_until(kernel_done, 2us));
        std::thread{[] {
          std::this_thread::sleep_for(20ms);
          kernel_done.count_down();
        }}.detach();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "launch late took 2.000 us \\(device\\)\n"
      "profile summary \\(device timing\\): 1 launch, 2.00 us");
}

TEST_F(ProfilingLoggerAtExit, GivesUpOnAMeasurementThatNeverArrivesAndSaysSo) {
  EXPECT_EXIT(
      {
        logger().set_level(profile_level::medium);
        logger().start();
        static std::latch never{1};
        logger().record(launch("stuck"), pending_until(never, 1us));
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "stopped waiting at exit.*up to 1 launch lines and the last summary");
}

/// Set in a child forked by a test, so LeakSanitizer leaves its exit alone (__lsan_is_turned_off).
std::atomic<bool> forked_child{false};

/// The child's exit status if it exits within `limit`; otherwise it is killed and there is none.
std::optional<int> exit_status_within(::pid_t child, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      return std::nullopt;
    }
    std::this_thread::sleep_for(1ms);
  }
  return status;
}

TEST_F(ProfilingLoggerAtExit, AForkedChildExitsAtOnceWithoutWaitingForItsParentsWriter) {
  logger().set_level(profile_level::medium);
  logger().start();
  std::latch kernel_done{1};
  struct finish_the_kernel {  // on every way out, and before the latch goes, which the writer reads
    std::latch& done;
    ~finish_the_kernel() {
      done.count_down();
      logger().flush();
    }
  } finishing{kernel_done};
  // Forks land at any point of the writer's cycle, its lock held or not: the child inherits the
  // writer's handle, queue and lock state, but not its thread.
  for (int round = 0; round < 20; ++round) {
    if (round < 19) {
      logger().record(launch("in_the_parent"), lasting(1us));
    } else {
      logger().record(launch("in_the_parent"), pending_until(kernel_done, 1us));
    }
    const ::pid_t child = ::fork();
    if (child == 0) {
      forked_child.store(true);
      std::exit(0);
    }
    ASSERT_GT(child, 0);
    const auto status = exit_status_within(child, 4000ms);
    ASSERT_TRUE(status.has_value())
        << "round " << round << ": the child hung at exit waiting for its parent's writer";
    ASSERT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), 0);
  }
}

}  // namespace
}  // namespace launchwatch

// LeakSanitizer asks a program through this function whether to skip its leak check at exit (in a
// build without it, nothing calls it). A child forked by a test skips it, and only the child:
// - the check locks AddressSanitizer's allocator, whose locks GCC 12's runtime does not take
//   across fork(), so one that a parent thread (the logger's writer) held at the fork stays held
//   in the child, and the child's exit hangs. gdb on such a child (debug-asan, 4 of 20 runs on a
//   loaded machine): exit -> __lsan::DoLeakCheck -> LockStuffAndStopTheWorld -> LockAllocator ->
//   SizeClassAllocator64::ForceLock, waiting forever; with ASAN_OPTIONS=detect_leaks=0, 20 of 20
//   passed. launchwatch's own exit work, which the test is about, has run by then (LeakSanitizer
//   checks last, from libasan's destructor).
// - what the parent's other threads held on their stacks is unreachable in a child that has no
//   such threads, so the child's check would report leaks that are none.
// The parent still checks for leaks.
extern "C" int __lsan_is_turned_off() { return launchwatch::forked_child.load() ? 1 : 0; }
