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

std::uint8_t* activity_buffer_pool::allocate_zeroed() noexcept {
  auto* buffer = static_cast<std::uint8_t*>(std::aligned_alloc(record_alignment, buffer_bytes_));
  if (buffer == nullptr) return nullptr;
  // Written through, not calloc'd: a fresh mapping's pages would fault in at CUPTI's first
  // record on the launching thread, which is what the pool is for avoiding.
  std::memset(buffer, 0, buffer_bytes_);
  try {
    std::lock_guard lock{mutex_};
    owned_.insert(buffer);
    ++allocated_;
  } catch (...) {
    std::free(buffer);  // not known as ours, it could not come back: none rather than a stray
    return nullptr;
  }
  return buffer;
}

void activity_buffer_pool::release(std::uint8_t* buffer) noexcept {
  owned_.erase(buffer);
  std::free(buffer);
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
    if (ready_.size() >= kept_) {
      release(buffer);
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
  return allocate_zeroed();
}

bool activity_buffer_pool::give_back(std::uint8_t* buffer, std::size_t used) noexcept {
  {
    std::lock_guard lock{mutex_};
    if (buffer == nullptr || !owned_.contains(buffer)) return false;
    if (ready_.size() >= kept_) {
      release(buffer);
      return true;
    }
  }
  // CUPTI appends records from the start; `used` is where the last complete one ends. A page past
  // it covers a record CUPTI may have begun and not finished, so the next user finds zeros
  // wherever CUPTI writes.
  const std::size_t written = (used + page_bytes - 1) / page_bytes * page_bytes + page_bytes;
  std::memset(buffer, 0, std::min(written, buffer_bytes_));
  std::lock_guard lock{mutex_};
  if (ready_.size() >= kept_) {
    release(buffer);
    return true;
  }
  ready_.push_back(buffer);
  return true;
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
