// Launching a kernel entry through the driver's own launch call (entry_launch.hpp).
#include "entry_launch.hpp"

#include <cuda.h>

#include "backend/gpu/entry_handles.hpp"

namespace launchwatch::detail::cuda {

#if CUDART_VERSION >= 12050  // cudaGetDriverEntryPointByVersion; cudaGetKernel since 12.1

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

/// The entry's kernel: context-free (loaded into each context that launches it), which
/// cuLaunchKernel takes in place of a function and launches in the calling thread's context.
CUkernel kernel_of(const void* entry) noexcept {
  cudaKernel_t kernel = nullptr;
  if (cudaGetKernel(&kernel, entry) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<CUkernel>(kernel);
}

constinit gpu::entry_handles<CUkernel> kernels;

}  // namespace

cudaError_t launch_entry(const void* entry, dim3 grid, dim3 block, void** arguments,
                         cudaStream_t stream) noexcept {
  if (const driver_launch_function launch = driver_launch(); launch != nullptr) {
    CUkernel kernel = nullptr;
    try {
      kernel = kernels.handle(entry, kernel_of);
    } catch (...) {  // the table's lock could not be taken: the runtime launches it
    }
    if (kernel != nullptr &&
        launch(reinterpret_cast<CUfunction>(kernel), grid.x, grid.y, grid.z, block.x, block.y,
               block.z, 0, reinterpret_cast<CUstream>(stream), arguments,
               nullptr) == CUDA_SUCCESS) {
      return cudaSuccess;
    }
  }
  // No handle, or the driver refused: the runtime launches it (it makes a context current on a
  // thread that has none), or fails in its own terms.
  return cudaLaunchKernel(entry, grid, block, arguments, 0, stream);
}

std::size_t entries_known() { return kernels.size(); }

#else  // an older toolkit: the runtime's call alone

std::size_t entries_known() { return 0; }

cudaError_t launch_entry(const void* entry, dim3 grid, dim3 block, void** arguments,
                         cudaStream_t stream) noexcept {
  return cudaLaunchKernel(entry, grid, block, arguments, 0, stream);
}

#endif

}  // namespace launchwatch::detail::cuda
