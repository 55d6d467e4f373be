// A program for `launchwatch run`'s tests, which needs no GPU: it opens NVTX ranges (so the
// injection loads through NVTX_INJECTION64_PATH) and ends as its arguments say.
//
//   nvtx_program exit N          ranges "outer/inner" on two threads, then exit status N
//   nvtx_program signal N        the same ranges, then raises signal N
//   nvtx_program wait READY      a closed range "collected", an open range "waiting", writes its
//                                pid into the file READY and sleeps until a signal ends it
//   nvtx_program kill N          the ranges, then ends itself with SIGKILL (before any report)
//   nvtx_program spawn N         the ranges, then runs `nvtx_program exit 0` as a child process and
//                                waits for it, then exit status N
//   nvtx_program fork N          the ranges, then forks a child that opens ranges too and calls
//                                exit(0) (so atexit handlers run in it), waits for it, exit status N
//   nvtx_program ranks N         like spawn, with two children given RANK=10 and RANK=2 in turn
//   nvtx_program forkterm N      the ranges, then forks a child that sends itself SIGTERM; exit
//                                status N once the child was ended by it (93 if it was not)
//   nvtx_program steps N         N times the ranges "outer/inner" (2 N scope intervals), then exit
//                                status 0

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

extern char** environ;

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
    std::fprintf(stderr, "usage: nvtx_program exit N | signal N | kill N | wait READY_FILE | spawn N | ranks N | fork N | forkterm N | steps N\n");
    return 2;
  }
  const std::string_view mode{argv[1]};
  if (mode == "exit") {
    ranges();
    std::thread{ranges}.join();
    return std::atoi(argv[2]);
  }
  if (mode == "spawn" || mode == "ranks") {
    ranges();
    const std::vector<const char*> ranks =
        mode == "ranks" ? std::vector<const char*>{"10", "2"} : std::vector<const char*>{nullptr};
    for (const char* rank : ranks) {
      if (rank != nullptr) setenv("RANK", rank, 1);
      char exit_word[] = "exit";
      char zero[] = "0";
      char* child_argv[] = {argv[0], exit_word, zero, nullptr};
      pid_t child = 0;
      if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, child_argv, environ) != 0) return 90;
      int status = 0;
      if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 91;
    }
    return std::atoi(argv[2]);
  }
  if (mode == "fork") {
    ranges();
    std::thread{ranges}.join();
    const pid_t child = fork();
    if (child == 0) {
      ranges();
      std::exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return 92;
    }
    return std::atoi(argv[2]);
  }
  if (mode == "forkterm") {
    ranges();
    const pid_t child = fork();
    if (child == 0) {
      std::raise(SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds{2});
      _exit(0);  // still here: SIGTERM was caught by someone
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) return 92;
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGTERM) return 93;
    return std::atoi(argv[2]);
  }
  if (mode == "kill") {
    ranges();
    return std::raise(SIGKILL);
  }
  if (mode == "steps") {
    for (long i = std::atol(argv[2]); i > 0; --i) ranges();
    return 0;
  }
  if (mode == "signal") {
    ranges();
    std::signal(std::atoi(argv[2]), SIG_DFL);
    return std::raise(std::atoi(argv[2]));
  }
  nvtxRangePushA("collected");
  nvtxRangePop();
  nvtxRangePushA("waiting");
  // Written whole, then renamed: a test polling for the file never reads it half written.
  const std::string partial = std::string{argv[2]} + ".partial";
  if (std::FILE* ready = std::fopen(partial.c_str(), "w")) {
    std::fprintf(ready, "%ld\n", static_cast<long>(getpid()));
    std::fclose(ready);
    std::rename(partial.c_str(), argv[2]);
  }
  for (;;) std::this_thread::sleep_for(std::chrono::seconds{1});
}
