// What an NVTX range is called, as launchwatch's injection receives it: an ASCII (in practice
// UTF-8) or wide string, or a string the program registered first, inside event attributes whose
// size and version the program set. The names become scope names, so they must be bounded, never
// empty, and safe to read whatever the program passed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <nvtx3/nvToolsExt.h>

namespace launchwatch::detail {

/// The longest scope name a range gets, in bytes; a longer message is cut at a character boundary.
/// Range names are interned for the life of the process (scope.hpp), so an unbounded message would
/// grow it without limit.
inline constexpr std::size_t max_range_name = 256;

/// The name a range without a usable message gets (null, empty, an unknown message type, a
/// registered handle this injection never issued).
inline constexpr std::string_view unnamed_range = "(unnamed range)";

/// Strings and domains registered by the program, interned for the life of the process.
///
/// Handles are small numbers, not pointers, so a handle this registry never issued is recognised
/// (it names no string) rather than read through. Thread safety: every method may be called from
/// any thread at once. Cost: a lock, and a copy of the string the first time it is seen.
class nvtx_registry {
 public:
  /// The handle of `text` (the same handle for the same text), registered on first sight.
  nvtxStringHandle_t register_string(std::string_view text);
  /// The text of a handle register_string issued; empty when it issued no such handle.
  std::string_view text_of(nvtxStringHandle_t handle) const;
  /// The handle of the domain called `name`; never null, the same for the same name.
  nvtxDomainHandle_t create_domain(std::string_view name);
  /// The process's registry (never destroyed: NVTX calls may come while statics are destroyed).
  static nvtx_registry& get();

  /// The registry's lock, for the fork handlers that take it across fork() (fork_locks.hpp).
  std::mutex& lock_for_fork() noexcept { return mutex_; }

 private:
  mutable std::mutex mutex_;
  std::deque<const std::string*> strings_;  // handle n is *strings_[n - 1]
  std::map<std::string, std::uintptr_t, std::less<>> string_ids_;
  std::map<std::string, std::uintptr_t, std::less<>> domain_ids_;
};

/// A range name from an ASCII/UTF-8 message: the bytes up to the first NUL, at most
/// max_range_name of them (cut before an incomplete UTF-8 sequence), or unnamed_range.
std::string_view ascii_range_name(const char* message);

/// A range name from a wide message (UTF-32 on Linux), written as UTF-8 into `buffer`; a code unit
/// that is no Unicode scalar value becomes U+FFFD. Bounded and never empty like ascii_range_name.
std::string_view wide_range_name(const wchar_t* message, std::string& buffer);

/// A range name from event attributes as NVTX hands them over (`attributes` may be null, carry any
/// message type, or be smaller than this NVTX's struct); registered strings are looked up in
/// `registry`. The view is into the message, `buffer` or the registry.
std::string_view range_name(const nvtxEventAttributes_t* attributes, std::string& buffer,
                            const nvtx_registry& registry);

}  // namespace launchwatch::detail
