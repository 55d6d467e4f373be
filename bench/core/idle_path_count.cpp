// Idle launches and an empty loop of the same shape, in functions of their own, for callgrind to
// count instructions in: the difference per iteration is what an idle notify_launch executes.
//
//   valgrind --tool=callgrind --callgrind-out-file=idle.out launchwatch_idle_path_count 1000000
//   callgrind_annotate --inclusive=yes idle.out | grep launchwatch_count_
//
// Timings of one load and one branch drown in a shared machine's noise; instruction counts are
// exact, and so are comparable from run to run.

#include <launchwatch/launch_path.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

constexpr std::string_view kernel_name = "launchwatch_bench::saxpy<float>";

/// Makes the name unknown to the compiler at every iteration while leaving it in registers, as the
/// benchmark does, so the two loops differ by the hook alone.
inline void opaque(std::string_view& kernel) {
  const char* data = kernel.data();
  std::size_t size = kernel.size();
  asm volatile("" : "+r"(data), "+r"(size));
  kernel = std::string_view{data, size};
}

}  // namespace

extern "C" [[gnu::noinline]] void launchwatch_count_empty_loop(std::uint64_t n) {
  std::string_view kernel = kernel_name;
  for (std::uint64_t i = 0; i < n; ++i) {
    opaque(kernel);
  }
}

extern "C" [[gnu::noinline]] void launchwatch_count_idle_notify_launch(std::uint64_t n) {
  std::string_view kernel = kernel_name;
  for (std::uint64_t i = 0; i < n; ++i) {
    opaque(kernel);
    launchwatch::launch_path::notify_launch(kernel);
  }
}

int main(int argc, char** argv) {
  const std::uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  if (n == 0) {
    std::fprintf(stderr, "usage: %s [iterations > 0]\n", argv[0]);
    return 2;
  }
  launchwatch_count_empty_loop(n);
  launchwatch_count_idle_notify_launch(n);
  std::printf("ran %llu iterations of each loop\n", static_cast<unsigned long long>(n));
  return 0;
}
