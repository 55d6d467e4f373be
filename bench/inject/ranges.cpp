// A long-running loop of NVTX ranges (a training loop's "step"), the program of review
// 2026-12-01b finding 7: `ranges N [END_FILE]` makes N steps of `step/forward` push/pop, then
// writes the CLOCK_MONOTONIC instant its loop ended (nanoseconds) to END_FILE, so whoever ran it
// can tell how long the report took after the program's own work was done.

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <nvtx3/nvToolsExt.h>

int main(int argc, char** argv) {
  const long steps = argc > 1 ? std::atol(argv[1]) : 1000000;
  for (long i = 0; i < steps; ++i) {
    nvtxRangePushA("step");
    nvtxRangePushA("forward");
    nvtxRangePop();
    nvtxRangePop();
  }
  timespec end{};
  clock_gettime(CLOCK_MONOTONIC, &end);
  if (argc > 2) {
    if (std::FILE* file = std::fopen(argv[2], "w")) {
      std::fprintf(file, "%lld\n", static_cast<long long>(end.tv_sec) * 1000000000LL + end.tv_nsec);
      std::fclose(file);
    }
  }
  return 0;
}
