// client::cuda() in a build without the CUDA backend: part of launchwatch::core then, so a program
// written for both backends links and runs everywhere and learns at run time that CUDA is absent.
#include <fmt/format.h>

#include <launchwatch/runtime/client.hpp>
#include <launchwatch/errors.hpp>

namespace launchwatch {

client client::cuda(int device_index) {
  throw backend_unavailable{fmt::format(
      "launchwatch::client::cuda({}): this build of launchwatch has no CUDA backend (it was "
      "configured with LAUNCHWATCH_CUDA=OFF, or without a CUDA compiler). Rebuild with the CUDA "
      "toolkit and -DLAUNCHWATCH_CUDA=ON, or use client::cpu()",
      device_index)};
}

}  // namespace launchwatch
