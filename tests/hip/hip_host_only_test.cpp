// A launch from a file no HIP compiler compiled carries no HIP entry, so a HIP client refuses it
// saying to compile the file as HIP (hip_runtime.hpp's wording), as a CUDA client does for nvcc.
// Compiled by g++ in every build with the HIP backend; needs no GPU.

#include <gtest/gtest.h>

#include <launchwatch/runtime/client.hpp>

namespace launchwatch::hip_testing {
namespace {

struct fill_ones {
  device_span<int> out;
  LAUNCHWATCH_HOST_DEVICE void operator()(unit u) const {
    if (u.absolute_pos() < out.size()) out[u.absolute_pos()] = 1;
  }
};

TEST(HipLaunch, AFileNoHipCompilerCompiledGivesItsLaunchesNoHipEntry) {
  EXPECT_FALSE(detail::compiled_as_hip);
  EXPECT_EQ((detail::hip_entry_address<fill_ones, detail::compiled_as_hip>()), nullptr);
}

}  // namespace
}  // namespace launchwatch::hip_testing
