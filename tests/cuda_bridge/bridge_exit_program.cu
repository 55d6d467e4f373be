// A CUDA program that ends while CUDA is still at work, for the end of `launchwatch run` (issue 23;
// review 2026-12-01b, finding 13 and the unconfirmed U2 and U4). run_exit_test.cpp runs it.
//
//   helper-launches-at-exit  a second thread launches empty kernels in a tight loop while main
//                            returns (finding 13: the report is written and nothing crashes)
//   reset-before-exit        100 kernels, cudaDeviceReset, return (U2: the report is not held up)
//   queued-at-exit           10 000 kernels queued, main returns without waiting (U4: CUPTI's exit
//                            handler hands buffers over after the injection's statics are gone)
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

__global__ void empty_kernel() {}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device\n");
    return 3;
  }
  if (std::strcmp(mode, "helper-launches-at-exit") == 0) {
    std::thread{[] {
      for (;;) empty_kernel<<<1, 1>>>();
    }}.detach();
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
    return 0;
  }
  if (std::strcmp(mode, "reset-before-exit") == 0) {
    for (int i = 0; i < 100; ++i) empty_kernel<<<1, 1>>>();
    return cudaDeviceReset() == cudaSuccess ? 0 : 4;
  }
  if (std::strcmp(mode, "queued-at-exit") == 0) {
    for (int i = 0; i < 10000; ++i) empty_kernel<<<1, 1>>>();
    return 0;
  }
  std::fprintf(stderr,
               "usage: %s helper-launches-at-exit | reset-before-exit | queued-at-exit\n",
               argv[0]);
  return 2;
}
