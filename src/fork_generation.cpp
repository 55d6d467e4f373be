#include "fork_generation.hpp"

#include <pthread.h>

#include <atomic>

namespace launchwatch::detail {
namespace {

std::atomic<std::uint64_t> generation{0};

// Registered while the library is loaded (this file is linked whenever fork_generation() is used),
// so no fork() can come before it.
[[maybe_unused]] const int registered = ::pthread_atfork(
    nullptr, nullptr, [] { generation.fetch_add(1, std::memory_order_relaxed); });

}  // namespace

std::uint64_t fork_generation() noexcept { return generation.load(std::memory_order_relaxed); }

}  // namespace launchwatch::detail
