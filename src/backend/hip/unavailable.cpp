// client::hip() in a build without the HIP backend: part of launchwatch::core then, so a program
// written for every backend links and runs everywhere and learns at run time that HIP is absent.
#include <fmt/format.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

namespace launchwatch {

client client::hip(int device_index) {
  throw backend_unavailable{fmt::format(
      "launchwatch::client::hip({}): this build of launchwatch has no HIP backend (it was "
      "configured with LAUNCHWATCH_HIP=OFF, or without HIP: hipcc and libamdhip64-dev for AMD "
      "GPUs, or LAUNCHWATCH_HIP_PLATFORM=nvidia with the CUDA toolkit for NVIDIA GPUs). Rebuild "
      "with -DLAUNCHWATCH_HIP=ON, or use client::cpu()",
      device_index)};
}

}  // namespace launchwatch
