// Device memory a program owns.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <launchwatch/runtime/device_span.hpp>

namespace launchwatch {

class client;

namespace detail {
/// One device allocation, defined by the runtime: its memory, its device, and the launches that
/// referenced it (so a read waits for those only, and the memory is freed after the last of them).
struct allocation;
}  // namespace detail

/// `size()` elements of `T` in one device's memory, created by a `client` (`create`, `empty`).
///
/// An owner rather than a view, so memory cannot outlive its device or be freed under a kernel still
/// using it: destroying a buffer frees the memory once every launch that referenced it has finished.
/// Kernels never hold a buffer; they hold `device_span`s from `view()`, which carry the device's tag
/// so a launch on another device's client is rejected before it runs.
///
/// Contract: `T` is trivially copyable (its bytes are copied to and from the device). Copies of a
/// buffer share the same memory (cheap, reference-counted); a moved-from buffer is empty.
/// Thread safety: a buffer may be viewed and copied from several threads at once.
template <class T>
class buffer {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "launchwatch::buffer<T>: T must be a non-const trivially copyable type, because its "
                "bytes are copied to and from the device");

 public:
  using value_type = T;

  /// An empty buffer of no device; its views are empty spans.
  buffer() noexcept = default;

  /// How many elements it holds.
  std::size_t size() const noexcept { return size_; }
  /// How many bytes it holds.
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  /// Whether it holds no element.
  bool empty() const noexcept { return size_ == 0; }

  /// A kernel's view of every element. Cost: three copies.
  device_span<T> view() const noexcept { return device_span<T>{data_, size_, owner_}; }

  /// A kernel's view of `count` elements from `offset`.
  ///
  /// Throws std::out_of_range, naming the range and the size, when `[offset, offset + count)` does
  /// not lie within the buffer: a kernel indexing past its buffer corrupts memory silently, so the
  /// range is checked here, where it is known.
  device_span<T> view(std::size_t offset, std::size_t count) const {
    if (offset > size_ || count > size_ - offset) {
      throw std::out_of_range{"buffer::view(" + std::to_string(offset) + ", " +
                              std::to_string(count) + ") asks for elements [" +
                              std::to_string(offset) + ", " + std::to_string(offset + count) +
                              ") of a buffer of " + std::to_string(size_) + " elements"};
    }
    return device_span<T>{data_ + offset, count, owner_};
  }

  /// The device and allocation this buffer's memory belongs to.
  span_owner owner() const noexcept { return owner_; }

 private:
  friend class client;

  buffer(std::shared_ptr<detail::allocation> memory, T* data, std::size_t size, span_owner owner)
      : memory_{std::move(memory)}, data_{data}, size_{size}, owner_{owner} {}

  std::shared_ptr<detail::allocation> memory_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  span_owner owner_{};
};

}  // namespace launchwatch
