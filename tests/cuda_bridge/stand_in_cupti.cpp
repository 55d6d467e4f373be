// A stand-in for libcupti.so (soname libcupti.so.99, a major version no CUDA has): the one function
// open_cupti asks a library for, so cupti_places_test can put copies where the bridge looks for
// CUPTI and see which one it opens.
#include <cstdint>

extern "C" __attribute__((visibility("default"))) int cuptiGetVersion(std::uint32_t* version) {
  *version = 990001;
  return 0;
}
