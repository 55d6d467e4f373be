// Launching a kernel entry through the driver's own launch call (entry_launch.hpp).
#include "entry_launch.hpp"

#include <cuda.h>

namespace launchwatch::detail::cuda {

#if CUDART_VERSION >= 12050  // cudaGetDriverEntryPointByVersion

namespace {

using driver_launch_function = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                            unsigned, unsigned, unsigned, CUstream, void**, void**);

/// The driver's cuLaunchKernel with the parameters of CUDA 12's header, or null.
driver_launch_function driver_launch() noexcept {
  static const driver_launch_function found = []() -> driver_launch_function {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &function, 12000, cudaEnableDefault,
                                         &result) != cudaSuccess ||
        result != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<driver_launch_function>(function);
  }();
  return found;
}

}  // namespace

entry_launch_result launch_entry(cudaFunction_t function, const void* entry, dim3 grid, dim3 block,
                                 void** arguments, cudaStream_t stream) noexcept {
  if (function != nullptr) {
    if (const driver_launch_function launch = driver_launch();
        launch != nullptr &&
        launch(reinterpret_cast<CUfunction>(function), grid.x, grid.y, grid.z, block.x, block.y,
               block.z, 0, reinterpret_cast<CUstream>(stream), arguments,
               nullptr) == CUDA_SUCCESS) {
      return {cudaSuccess, true};
    }
  }
  return {cudaLaunchKernel(entry, grid, block, arguments, 0, stream), false};
}

#else  // an older toolkit: the runtime's call alone

entry_launch_result launch_entry(cudaFunction_t, const void* entry, dim3 grid, dim3 block,
                                 void** arguments, cudaStream_t stream) noexcept {
  return {cudaLaunchKernel(entry, grid, block, arguments, 0, stream), false};
}

#endif

}  // namespace launchwatch::detail::cuda
