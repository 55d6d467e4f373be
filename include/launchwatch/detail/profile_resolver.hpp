// The type-erased holder behind profile_duration: internal, but in a header because
// profile_duration stores it inline (no allocation per launch for small resolvers).
#pragma once

#include <cstddef>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

namespace launchwatch::detail {

/// Type-erased, move-only holder of the callable behind a profile_duration.
///
/// C++20 has no std::move_only_function, and the deferred-timing path builds one of these per
/// launch, so small resolvers (a pointer and an index, say) are stored inline rather than on the
/// heap. `Result` is what a read returns (profile.hpp names it: `std::optional<profile_ticks>`).
template <class Result>
class basic_profile_resolver {
 public:
  static constexpr std::size_t inline_size = 6 * sizeof(void*);

  basic_profile_resolver() noexcept = default;

  template <class F>
  explicit basic_profile_resolver(F&& resolve) {
    using stored = std::decay_t<F>;
    if constexpr (fits_inline<stored>()) {
      ::new (static_cast<void*>(storage_)) stored(std::forward<F>(resolve));
      ops_ = &inline_ops<stored>;
    } else {
      heap_ = new stored(std::forward<F>(resolve));
      ops_ = &heap_ops<stored>;
    }
  }

  basic_profile_resolver(basic_profile_resolver&& other) noexcept { take(other); }
  basic_profile_resolver& operator=(basic_profile_resolver&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  basic_profile_resolver(const basic_profile_resolver&) = delete;
  basic_profile_resolver& operator=(const basic_profile_resolver&) = delete;
  ~basic_profile_resolver() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  /// Runs the callable once and empties the holder, whether it returns or throws.
  Result call_once() {
    struct empties {
      basic_profile_resolver* self;
      ~empties() { self->reset(); }
    } on_exit{this};
    return ops_->call(target());
  }

 private:
  struct operations {
    Result (*call)(void* target);
    void (*relocate)(void* from, void* to) noexcept;  // inline storage only
    void (*destroy)(void* target) noexcept;
  };

  template <class F>
  static constexpr bool fits_inline() {
    return sizeof(F) <= inline_size && alignof(F) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<F>;
  }

  template <class F>
  static constexpr operations inline_ops{
      [](void* target) -> Result { return (*static_cast<F*>(target))(); },
      [](void* from, void* to) noexcept {
        ::new (to) F(std::move(*static_cast<F*>(from)));
        static_cast<F*>(from)->~F();
      },
      [](void* target) noexcept { static_cast<F*>(target)->~F(); }};

  template <class F>
  static constexpr operations heap_ops{
      [](void* target) -> Result { return (*static_cast<F*>(target))(); },
      nullptr, [](void* target) noexcept { delete static_cast<F*>(target); }};

  void* target() noexcept { return ops_->relocate ? static_cast<void*>(storage_) : heap_; }

  void take(basic_profile_resolver& other) noexcept {
    ops_ = std::exchange(other.ops_, nullptr);
    if (ops_ == nullptr) return;
    if (ops_->relocate) {
      ops_->relocate(other.storage_, storage_);
    } else {
      heap_ = std::exchange(other.heap_, nullptr);
    }
  }

  void reset() noexcept {
    if (ops_ != nullptr) ops_->destroy(target());
    ops_ = nullptr;
    heap_ = nullptr;
  }

  const operations* ops_ = nullptr;
  void* heap_ = nullptr;
  alignas(std::max_align_t) std::byte storage_[inline_size];
};

}  // namespace launchwatch::detail
