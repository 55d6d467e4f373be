// The buffers CUPTI fills with activity records, kept zeroed and reused off the launching thread.
//
// Why: CUPTI asks for a buffer inside a launch (its callback runs on the launching thread), and by
// default zeroes every buffer it is given there, before the launch goes on. The bridge flushes
// every few milliseconds while measurements are awaited, and each flush hands back every
// thread's partly filled buffer, so each launching thread soon asks for a new one: on the H200 a
// host-bound ResNet-18 step (about 380 launches from two threads, 12 ms) spent 0.42 ms of it in
// CUPTI's memset of fresh 2 MiB buffers, with their first-touch page faults, and the caches it
// evicted slowed the rest of the step (docs/benchmarks.md, "CUPTI zeroed each buffer on the
// launching thread"). With CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER set, CUPTI takes the
// buffers as given; this pool hands out buffers that are already zero and resident, and zeroes a
// buffer again where it comes back (CUPTI's completion callback, on the flushing thread), only as
// far as CUPTI wrote into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace launchwatch::detail::cuda_bridge {

/// Zeroed buffers of one size, handed out and taken back from any thread.
///
/// Thread safety: every member is safe from any thread. Cost: take() holds a lock for a few loads
/// and stores, and allocates and zeroes only when the pool is empty; give_back() holds it for a
/// hash lookup (is the buffer this pool's?) and zeroes what the buffer's user wrote (its `used`
/// bytes, rounded up, and a page past them in case a record was begun there).
class activity_buffer_pool {
 public:
  /// Buffers of `buffer_bytes` (a multiple of 8, CUPTI's record alignment); at most `kept` are
  /// kept between uses (more in use at once are allocated, and freed when they come back).
  activity_buffer_pool(std::size_t buffer_bytes, std::size_t kept);
  ~activity_buffer_pool();
  activity_buffer_pool(const activity_buffer_pool&) = delete;
  activity_buffer_pool& operator=(const activity_buffer_pool&) = delete;

  /// Allocates and zeroes buffers until `count` are kept ready (at most `kept`), so that the first
  /// launches find them: call where a launch does not wait, when the records are turned on.
  void fill(std::size_t count);

  /// A buffer of buffer_bytes() bytes, every one zero, or nullptr when memory ran out.
  [[nodiscard]] std::uint8_t* take() noexcept;

  /// `buffer` is done with, its first `used` bytes possibly written: zeroed again and kept, or
  /// freed when `kept` are already kept; true. False, and nothing done, for a buffer this pool did
  /// not hand out (null, or another CUPTI client's that CUPTI handed to the bridge's callback after
  /// the client gave CUPTI back: of a size and an allocator the pool does not know).
  [[nodiscard]] bool give_back(std::uint8_t* buffer, std::size_t used) noexcept;

  [[nodiscard]] std::size_t buffer_bytes() const noexcept { return buffer_bytes_; }
  /// Buffers kept ready now.
  [[nodiscard]] std::size_t ready() const noexcept;
  /// Buffers allocated so far (each zeroed once where it was allocated): how often take() found
  /// the pool empty, after fill().
  [[nodiscard]] std::size_t allocated() const noexcept;

 private:
  /// A new zeroed buffer, counted and known as this pool's; nullptr when memory ran out.
  [[nodiscard]] std::uint8_t* allocate_zeroed() noexcept;
  /// Frees one of this pool's buffers. Caller holds mutex_.
  void release(std::uint8_t* buffer) noexcept;

  const std::size_t buffer_bytes_;
  const std::size_t kept_;
  mutable std::mutex mutex_;
  std::vector<std::uint8_t*> ready_;  // under mutex_, reserved to kept_ so push_back cannot throw
  std::unordered_set<std::uint8_t*> owned_;  // under mutex_: every live buffer this pool made
  std::size_t allocated_ = 0;                // under mutex_
};

}  // namespace launchwatch::detail::cuda_bridge
