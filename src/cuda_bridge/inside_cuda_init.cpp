// The bridge made inside cuInit (inside_cuda_init.hpp).
#include "inside_cuda_init.hpp"

#include <atomic>
#include <utility>

namespace launchwatch::detail::cuda_bridge {
namespace {

thread_local bool inside = false;

}  // namespace

bool constructing_inside_cuda_init() noexcept { return inside; }

inside_cuda_init::inside_cuda_init() noexcept : was_{std::exchange(inside, true)} {}

inside_cuda_init::~inside_cuda_init() { inside = was_; }

namespace {
std::atomic<void (*)()> waiting{nullptr};
}  // namespace

bool after_cuda_runtime_initialised(void (*then)()) noexcept {
  void (*none)() = nullptr;
  return waiting.compare_exchange_strong(none, then);
}

void cuda_context_created() noexcept {
  if (waiting.load(std::memory_order_relaxed) == nullptr) return;
  if (auto* then = waiting.exchange(nullptr)) then();
}

}  // namespace launchwatch::detail::cuda_bridge
