// A program for `launchwatch run`'s tests, which needs no GPU: it opens NVTX ranges (so the
// injection loads through NVTX_INJECTION64_PATH) and ends as its arguments say.
//
//   nvtx_program exit N          ranges "outer/inner" on two threads, then exit status N
//   nvtx_program signal N        the same ranges, then raises signal N
//   nvtx_program wait READY      a closed range "collected", an open range "waiting", writes the
//                                file READY and sleeps until a signal ends it

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include <nvtx3/nvToolsExt.h>

namespace {

void ranges() {
  nvtxRangePushA("outer");
  nvtxRangePushA("inner");
  nvtxRangePop();
  nvtxRangePop();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: nvtx_program exit N | signal N | wait READY_FILE\n");
    return 2;
  }
  const std::string_view mode{argv[1]};
  if (mode == "exit") {
    ranges();
    std::thread{ranges}.join();
    return std::atoi(argv[2]);
  }
  if (mode == "signal") {
    ranges();
    std::signal(std::atoi(argv[2]), SIG_DFL);
    return std::raise(std::atoi(argv[2]));
  }
  nvtxRangePushA("collected");
  nvtxRangePop();
  nvtxRangePushA("waiting");
  if (std::FILE* ready = std::fopen(argv[2], "w")) std::fclose(ready);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds{1});
}
