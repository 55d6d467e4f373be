// Zeroed activity buffers, reused (activity_buffer_pool.hpp).
#include "activity_buffer_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace launchwatch::detail::cuda_bridge {
namespace {

constexpr std::size_t record_alignment = 8;  // CUPTI's ACTIVITY_RECORD_ALIGNMENT
constexpr std::size_t page_bytes = 4096;

}  // namespace

activity_buffer_pool::activity_buffer_pool(std::size_t buffer_bytes, std::size_t kept)
    : buffer_bytes_{buffer_bytes}, kept_{kept} {
  ready_.reserve(kept_);
}

activity_buffer_pool::~activity_buffer_pool() {
  for (std::uint8_t* buffer : ready_) std::free(buffer);
}

std::uint8_t* activity_buffer_pool::allocate_zeroed() const noexcept {
  auto* buffer = static_cast<std::uint8_t*>(std::aligned_alloc(record_alignment, buffer_bytes_));
  // Written through, not calloc'd: a fresh mapping's pages would fault in at CUPTI's first
  // record on the launching thread, which is what the pool is for avoiding.
  if (buffer != nullptr) std::memset(buffer, 0, buffer_bytes_);
  return buffer;
}

void activity_buffer_pool::fill(std::size_t count) {
  count = std::min(count, kept_);
  for (;;) {
    {
      std::lock_guard lock{mutex_};
      if (ready_.size() >= count) return;
    }
    std::uint8_t* buffer = allocate_zeroed();
    if (buffer == nullptr) return;
    std::lock_guard lock{mutex_};
    ++allocated_;
    if (ready_.size() >= kept_) {
      std::free(buffer);
      return;
    }
    ready_.push_back(buffer);
  }
}

std::uint8_t* activity_buffer_pool::take() noexcept {
  {
    std::lock_guard lock{mutex_};
    if (!ready_.empty()) {
      std::uint8_t* buffer = ready_.back();
      ready_.pop_back();
      return buffer;
    }
  }
  std::uint8_t* buffer = allocate_zeroed();
  if (buffer != nullptr) {
    std::lock_guard lock{mutex_};
    ++allocated_;
  }
  return buffer;
}

void activity_buffer_pool::give_back(std::uint8_t* buffer, std::size_t used) noexcept {
  if (buffer == nullptr) return;
  {
    std::lock_guard lock{mutex_};
    if (ready_.size() >= kept_) {
      std::free(buffer);
      return;
    }
  }
  // CUPTI appends records from the start; `used` is where the last complete one ends. A page past
  // it covers a record CUPTI may have begun and not finished, so the next user finds zeros
  // wherever CUPTI writes.
  const std::size_t written = (used + page_bytes - 1) / page_bytes * page_bytes + page_bytes;
  std::memset(buffer, 0, std::min(written, buffer_bytes_));
  std::lock_guard lock{mutex_};
  if (ready_.size() >= kept_) {
    std::free(buffer);
    return;
  }
  ready_.push_back(buffer);
}

std::size_t activity_buffer_pool::ready() const noexcept {
  std::lock_guard lock{mutex_};
  return ready_.size();
}

std::size_t activity_buffer_pool::allocated() const noexcept {
  std::lock_guard lock{mutex_};
  return allocated_;
}

}  // namespace launchwatch::detail::cuda_bridge
