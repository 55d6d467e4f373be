// Raw cudaLaunchKernel of an empty kernel, for vulkan_launch_bench.cpp's side-by-side ratio.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace {
__global__ void raw_empty() {}
}  // namespace

/// Median host nanoseconds per cudaLaunchKernel over `batches` batches of `launches`; a negative
/// value when no GPU answers.
double raw_cuda_launch_ns(int launches, int batches) {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return -1.0;
  const void* entry = reinterpret_cast<const void*>(&raw_empty);
  void* no_arguments[] = {nullptr};
  for (int i = 0; i < 1000; ++i) (void)cudaLaunchKernel(entry, dim3{1}, dim3{1}, no_arguments, 0, stream);
  (void)cudaStreamSynchronize(stream);
  std::vector<double> per_launch;
  for (int b = 0; b < batches; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) (void)cudaLaunchKernel(entry, dim3{1}, dim3{1}, no_arguments, 0, stream);
    const auto end = std::chrono::steady_clock::now();
    (void)cudaStreamSynchronize(stream);
    per_launch.push_back(std::chrono::duration<double, std::nano>(end - start).count() / launches);
  }
  (void)cudaStreamDestroy(stream);
  std::sort(per_launch.begin(), per_launch.end());
  return per_launch[per_launch.size() / 2];
}
