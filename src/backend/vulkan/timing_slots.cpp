// Timing slots for a Vulkan device: lending, handing back and reading timestamp pairs.
#include "backend/vulkan/timing_slots.hpp"

#include "backend/vulkan/vulkan_stream.hpp"

namespace launchwatch::detail::vulkan {

timing_slots::timing_slots(const device_api& api, VkDevice device, std::uint32_t pairs,
                           std::uint32_t valid_bits)
    : api_{api},
      device_{device},
      pairs_{pairs},
      mask_{valid_bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid_bits) - 1} {
  if (pairs_ == 0) return;
  VkQueryPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = 2 * pairs_;
  check(api_.vkCreateQueryPool(device_, &info, nullptr, &pool_), "vkCreateQueryPool");
  api_.vkResetQueryPool(device_, pool_, 0, 2 * pairs_);
  free_.reserve(pairs_);
  for (std::uint32_t p = pairs_; p > 0; --p) free_.push_back(p - 1);
}

timing_slots::~timing_slots() {
  dropped_.clear();
  if (pool_ != VK_NULL_HANDLE) api_.vkDestroyQueryPool(device_, pool_, nullptr);
}

void timing_slots::reset(std::uint32_t pair) noexcept {
  api_.vkResetQueryPool(device_, pool_, 2 * pair, 2);
}

std::optional<std::uint32_t> timing_slots::acquire() {
  std::vector<std::shared_ptr<vulkan_stream>> let_go;  // released after the lock
  std::lock_guard lock{mutex_};
  if (free_.empty() && !dropped_.empty()) {
    for (auto it = dropped_.begin(); it != dropped_.end();) {
      if (static_cast<stream&>(*it->on).passed(it->point)) {
        reset(it->pair);
        free_.push_back(it->pair);
        let_go.push_back(std::move(it->on));
        it = dropped_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (free_.empty()) return std::nullopt;
  const std::uint32_t pair = free_.back();
  free_.pop_back();
  return pair;
}

void timing_slots::release(std::uint32_t pair) noexcept {
  reset(pair);
  std::lock_guard lock{mutex_};
  free_.push_back(pair);
}

void timing_slots::release_after(std::uint32_t pair, std::shared_ptr<vulkan_stream> on,
                                 std::uint64_t point) noexcept {
  try {
    std::lock_guard lock{mutex_};
    dropped_.push_back(dropped{pair, std::move(on), point});
  } catch (...) {
    // Out of memory: the pair is lost to the slots, which then time more launches `system`.
  }
}

std::array<std::uint64_t, 2> timing_slots::read(std::uint32_t pair) const {
  std::uint64_t stamps[2]{};
  check(api_.vkGetQueryPoolResults(device_, pool_, 2 * pair, 2, sizeof stamps, stamps,
                                   sizeof stamps[0], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  return {stamps[0] & mask_, stamps[1] & mask_};
}

}  // namespace launchwatch::detail::vulkan
