// A program's own empty launches, timed by the program: the host time per `<<<>>>` launch, for
// comparing the same program plain and under `launchwatch run` (the injected bridge, made inside
// cuInit), where launchwatch cannot time itself from inside. Prints one line per round and the
// median last:
//
//   launchwatch_launch_loop [launches per round, default 20000] [rounds, default 9]
//   launchwatch run --timing none -- launchwatch_launch_loop
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

__global__ void empty_kernel() {}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  if (launches < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: %s [launches per round] [rounds] (both at least 1)\n", argv[0]);
    return 2;
  }
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::printf("no CUDA device: nothing measured\n");
    return 0;
  }
  for (int i = 0; i < 2000; ++i) empty_kernel<<<1, 1, 0, stream>>>();  // module load, first costs
  (void)cudaStreamSynchronize(stream);
  std::vector<double> us;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) empty_kernel<<<1, 1, 0, stream>>>();
    const auto end = std::chrono::steady_clock::now();
    (void)cudaStreamSynchronize(stream);
    us.push_back(std::chrono::duration<double, std::micro>(end - start).count() / launches);
    std::printf("round %d: %.3f us a launch\n", r + 1, us.back());
  }
  std::sort(us.begin(), us.end());
  std::printf("median: %.3f us a launch (%d launches x %d rounds)\n", us[us.size() / 2], launches,
              rounds);
  (void)cudaStreamDestroy(stream);
  return 0;
}
