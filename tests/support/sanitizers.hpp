// Which sanitizer a test binary was built with, for the tests whose subject a sanitizer's own
// runtime gets in the way of (the fork tests), and the reasons they give when they skip.
#pragma once

namespace launchwatch::testing {

// GCC says so with __SANITIZE_*__; clang (the debug-asan preset's compiler) with __has_feature.
#if defined(__has_feature)
#define LAUNCHWATCH_TEST_HAS_FEATURE(name) __has_feature(name)
#else
#define LAUNCHWATCH_TEST_HAS_FEATURE(name) 0
#endif

#if defined(__SANITIZE_THREAD__) || LAUNCHWATCH_TEST_HAS_FEATURE(thread_sanitizer)
inline constexpr bool under_thread_sanitizer = true;
#else
inline constexpr bool under_thread_sanitizer = false;
#endif

#if defined(__SANITIZE_ADDRESS__) || LAUNCHWATCH_TEST_HAS_FEATURE(address_sanitizer)
inline constexpr bool under_address_sanitizer = true;
#else
inline constexpr bool under_address_sanitizer = false;
#endif

/// Why a test whose forked children allocate while a parent thread allocates skips under ASan.
///
/// GCC 12's AddressSanitizer allocator takes no lock across fork(): a parent thread allocating or
/// freeing at that moment (the CPU pool's worker dropping a finished job, a thread interning a
/// scope's name) leaves the allocator's lock held in the child, whose first allocation then waits
/// forever, whatever launchwatch does (seen here: a child stuck in
/// SizeClassAllocator64::GetFromAllocator; in CI, the first child hung). Clang 14's runtime, which
/// the debug-asan preset builds with, shares that allocator's code and is treated alike. glibc's
/// allocator is fork-safe, so these tests run in the release build (and under TSan, where they
/// can).
inline constexpr const char* address_sanitizer_fork_unsafe =
    "this AddressSanitizer's allocator is not fork-safe in a multi-threaded parent";

}  // namespace launchwatch::testing
