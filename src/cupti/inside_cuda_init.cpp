// The bridge made inside cuInit (inside_cuda_init.hpp).
#include "inside_cuda_init.hpp"

#include <cuda_runtime.h>

#include <exception>
#include <thread>
#include <utility>

namespace launchwatch::detail::cupti {
namespace {

thread_local bool inside = false;

}  // namespace

bool constructing_inside_cuda_init() noexcept { return inside; }

inside_cuda_init::inside_cuda_init() noexcept : was_{std::exchange(inside, true)} {}

inside_cuda_init::~inside_cuda_init() { inside = was_; }

bool after_cuda_runtime_initialised(void (*then)()) noexcept {
  try {
    // Detached: a program may never finish initialising CUDA, and `then` must not hold up exit.
    std::thread{[then] {
      // Any runtime call returns only once the runtime's initialisation is done.
      int devices = 0;
      (void)cudaGetDeviceCount(&devices);
      (void)cudaGetLastError();
      then();
    }}.detach();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace launchwatch::detail::cupti
