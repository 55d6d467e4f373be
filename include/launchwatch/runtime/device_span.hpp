// A kernel's view of a buffer.
//
// This header is included by translation units nvcc compiles; it includes no CUDA header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <launchwatch/runtime/geometry.hpp>

namespace launchwatch {

/// Which device and which allocation a `device_span` views.
///
/// Carried by every span so a launch can reject a buffer of another device (or one already
/// destroyed) with a clear error before anything runs, and so a read waits only for the launches that
/// referenced its buffer. Both ids are process-unique and never reused; zero means "none", the owner
/// of a default-constructed, empty span.
struct span_owner {
  /// The id of the device the memory lives on (not its index: CPU device 0 and CUDA device 0 differ).
  std::uint64_t device = 0;
  /// The id of the allocation the span lies in.
  std::uint64_t allocation = 0;
  friend constexpr bool operator==(const span_owner&, const span_owner&) = default;
};

/// A view of `size()` elements of type `T` in a device's memory: what a kernel holds to read and
/// write a buffer.
///
/// Trivially copyable, so kernels holding spans stay trivially copyable and are passed to a device
/// by value. Get one from `buffer<T>::view()`; `device_span<const T>` is the read-only view, and a
/// `device_span<T>` converts to it. The memory is the device's: on a GPU, dereferencing a span on the
/// host is undefined; only kernels touch the elements.
///
/// Contract: a span does not own its memory; it is valid while its buffer lives. Element access is
/// not bounds-checked (it runs per unit inside kernels); a kernel guards its index against `size()`.
/// Thread safety: a value type. Cost: element access is a pointer offset.
template <class T>
class device_span {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using size_type = std::size_t;

  /// An empty span that views nothing and belongs to no device; a launch accepts it.
  constexpr device_span() noexcept = default;

  /// A view of `size` elements at `data`, owned as `owner` says.
  ///
  /// For `buffer` and backends: a span built by hand must name the allocation it lies in, or a launch
  /// that references it is rejected.
  LAUNCHWATCH_HOST_DEVICE constexpr device_span(T* data, std::size_t size, span_owner owner) noexcept
      : data_{data}, size_{size}, owner_{owner} {}

  /// A read-only view of a writable span (`device_span<float>` to `device_span<const float>`).
  template <class U>
    requires(!std::is_same_v<U, T> && std::is_convertible_v<U (*)[], T (*)[]>)
  LAUNCHWATCH_HOST_DEVICE constexpr device_span(const device_span<U>& other) noexcept
      : data_{other.data()}, size_{other.size()}, owner_{other.owner()} {}

  /// The element at `index`. Precondition: `index < size()`.
  LAUNCHWATCH_HOST_DEVICE constexpr T& operator[](std::size_t index) const noexcept {
    return data_[index];
  }

  /// The first element's address in device memory.
  LAUNCHWATCH_HOST_DEVICE constexpr T* data() const noexcept { return data_; }
  /// How many elements the span views.
  LAUNCHWATCH_HOST_DEVICE constexpr std::size_t size() const noexcept { return size_; }
  /// How many bytes the span views.
  LAUNCHWATCH_HOST_DEVICE constexpr std::size_t size_bytes() const noexcept {
    return size_ * sizeof(T);
  }
  /// Whether the span views no element.
  LAUNCHWATCH_HOST_DEVICE constexpr bool empty() const noexcept { return size_ == 0; }
  /// Iteration, for kernels that walk their span.
  LAUNCHWATCH_HOST_DEVICE constexpr T* begin() const noexcept { return data_; }
  LAUNCHWATCH_HOST_DEVICE constexpr T* end() const noexcept { return data_ + size_; }

  /// The device and allocation the span lies in.
  LAUNCHWATCH_HOST_DEVICE constexpr span_owner owner() const noexcept { return owner_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  span_owner owner_{};
};

/// Whether `T` is a `device_span` of some element type (cv-qualifiers ignored).
template <class T>
inline constexpr bool is_device_span_v = false;
template <class T>
inline constexpr bool is_device_span_v<device_span<T>> = true;
template <class T>
inline constexpr bool is_device_span_v<const device_span<T>> = true;

}  // namespace launchwatch
