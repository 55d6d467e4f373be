// One process driving several devices (issue 15): one tree and one trace for all of them, each
// device with its own rows and a trace process whose tracks are its streams. On the CPU backend,
// whose device indices are distinct devices, so it runs everywhere; tests/cuda checks the same
// launch path across GPUs where two are visible.

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/report/chrome_trace.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/runtime/client.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "conformance/conformance_kernels.hpp"

namespace launchwatch {
namespace {

using conformance::fill;

/// A thread that launches to device 0 and device 1 in turn under one scope, and another thread
/// launching to device 1 alone: three streams on two devices.
pass_record two_devices_pass() {
  auto first = client::cpu(0);
  auto second = client::cpu(1);
  auto on_first = first.empty<int>(64);
  auto on_second = second.empty<int>(64);
  auto loaded = second.empty<int>(64);  // the loader's own: two streams never write one buffer
  attribution_options options;
  options.timing = timing_request::deferred;
  return attribute_pass(
      [&] {
        {
          scope step{"step"};
          for (int i = 0; i < 3; ++i) {
            first.launch(fill{on_first.view(), i}, cube_count{2}, cube_dim{32});
            second.launch(fill{on_second.view(), i}, cube_count{2}, cube_dim{32});
          }
        }
        std::thread{[&] {
          scope loader{"loader"};
          second.launch(fill{loaded.view(), 9}, cube_count{2}, cube_dim{32});
          second.sync();
        }}.join();
        first.sync();
        second.sync();
      },
      options);
}

TEST(SeveralDevices, OneTreeAccountsForEachDeviceWithItsOwnStreams) {
  const auto summary = summarize(two_devices_pass());
  EXPECT_EQ(summary.launches, 7u);
  ASSERT_EQ(summary.devices.size(), 2u);
  std::map<int, std::size_t> launches_by_device, streams_by_device;
  for (const auto& device : summary.devices) {
    EXPECT_EQ(device.backend, "cpu");
    launches_by_device[device.device] = device.launches;
    streams_by_device[device.device] = device.streams;
  }
  EXPECT_EQ(launches_by_device[0], 3u);
  EXPECT_EQ(launches_by_device[1], 4u);
  EXPECT_EQ(streams_by_device[0], 1u) << "one thread launched to device 0";
  EXPECT_EQ(streams_by_device[1], 2u) << "two threads launched to device 1, a stream each";
  std::chrono::nanoseconds top{summary.outside.total};
  for (const auto& scope : summary.scopes) top += scope.total;
  EXPECT_EQ(top + summary.device_idle - summary.device_overlap, summary.device_window)
      << "the tree adds up to 100% over both devices";
}

TEST(SeveralDevices, OneTraceHasAProcessPerDeviceWithATrackPerStream) {
  std::ostringstream out;
  (void)write_chrome_trace(out, two_devices_pass());
  const auto trace = nlohmann::json::parse(out.str());
  std::map<int, std::string> process_names;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      process_names[e.at("pid").get<int>()] = e.at("args").at("name").get<std::string>();
    }
  }
  std::map<std::string, std::set<int>> kernel_tracks;  // device process name -> its tids
  std::map<std::string, int> kernels;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("cat") != "kernel") continue;
    const auto& name = process_names.at(e.at("pid").get<int>());
    kernel_tracks[name].insert(e.at("tid").get<int>());
    ++kernels[name];
  }
  EXPECT_EQ(kernels["cpu device 0"], 3);
  EXPECT_EQ(kernels["cpu device 1"], 4);
  EXPECT_EQ(kernel_tracks["cpu device 0"].size(), 1u);
  EXPECT_EQ(kernel_tracks["cpu device 1"].size(), 2u) << "a track per stream of the device";
}

}  // namespace
}  // namespace launchwatch
