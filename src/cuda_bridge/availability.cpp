// Whether the bridge can run here (availability.hpp).
#include "availability.hpp"

#include <cuda_runtime.h>
#include <cupti.h>

#include <utility>

#include <fmt/format.h>

#include "cuda_bridge/environment.hpp"
#include "cupti_calls.hpp"
#include "cupti_functions.hpp"
#include "inside_cuda_init.hpp"
#include "versions.hpp"

namespace launchwatch::detail::cuda_bridge {
namespace {

/// The versions in play (the driver's from the loaded driver: the runtime cannot be asked inside
/// cuInit, where the runtime's version is the one built against).
version_numbers versions_in_play() {
  version_numbers v;
  v.cupti_built = CUPTI_API_VERSION;
  // Before CUPTI is loaded (a message about the device) its version is unknown: 0.
  if (const auto get_version = cupti().get_version) (void)get_version(&v.cupti_loaded);
  using driver_version = CUresult (*)(int*);
  if (auto* get = reinterpret_cast<driver_version>(loaded_driver_function("cuDriverGetVersion"))) {
    (void)get(&v.driver);
  }
  v.runtime = CUDART_VERSION;
  if (!constructing_inside_cuda_init()) (void)cudaRuntimeGetVersion(&v.runtime);
  return v;
}

}  // namespace

std::string versions() { return describe(versions_in_play()); }

void unavailable(cuda_bridge_unavailable::reason why, const std::string& message,
                 std::string holder) {
  throw cuda_bridge_unavailable{why, "launchwatch::cuda_bridge: " + message, std::move(holder)};
}

void refuse_if_turned_off(const cuda_bridge_options& options) {
  if (!options.read_environment) return;
  if (const auto on = cupti_from_environment(); on && !*on) {
    unavailable(cuda_bridge_unavailable::reason::turned_off,
                fmt::format("{}=off turns the CUDA bridge off, so only launchwatch's own launches "
                            "are seen. Unset it (or set it to on) to watch every CUDA kernel of "
                            "the process.",
                            cupti_variable));
  }
}

void require_a_device() {
  using reason = cuda_bridge_unavailable::reason;
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status == cudaSuccess && devices > 0) return;
  (void)cudaGetLastError();
  if (status == cudaErrorInsufficientDriver) {
    unavailable(reason::incompatible,
                fmt::format("the CUDA driver is older than the CUDA runtime ({}): {}. Update the "
                            "driver, or run with the runtime it supports.",
                            versions(), cudaGetErrorString(status)));
  }
  unavailable(reason::no_device,
              fmt::format("no CUDA device is available ({}), so there are no CUDA launches to "
                          "watch. Run on a machine with an NVIDIA GPU and its driver.",
                          status == cudaSuccess ? "the driver reports 0 devices"
                                                : cudaGetErrorString(status)));
}

void require_fitting_versions() {
  if (const auto misfit = versions_misfit(versions_in_play())) {
    unavailable(cuda_bridge_unavailable::reason::incompatible, *misfit);
  }
}

}  // namespace launchwatch::detail::cuda_bridge
