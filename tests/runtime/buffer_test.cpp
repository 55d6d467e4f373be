// Buffers: what a client allocates for a count of elements.

#include <launchwatch/runtime/client.hpp>

#include <cstddef>
#include <limits>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace launchwatch {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

/// The smallest count of `T` whose size in bytes wraps past std::size_t to exactly `wrapped` bytes
/// (a multiple of sizeof(T) below it): what an unchecked `count * sizeof(T)` would allocate.
template <class T>
constexpr std::size_t count_wrapping_to(std::size_t wrapped) {
  return std::numeric_limits<std::size_t>::max() / sizeof(T) + 1 + wrapped / sizeof(T);
}

static_assert(count_wrapping_to<double>(8) * sizeof(double) == 8);

TEST(Buffer, AnEmptyBufferWhoseByteSizeOverflowsIsRefusedNamingItsCountAndElementSize) {
  const auto client = client::cpu();
  const std::size_t count = count_wrapping_to<double>(8);
  try {
    (void)client.empty<double>(count);
    FAIL() << "a buffer of " << count << " doubles was allocated";
  } catch (const error& refused) {
    EXPECT_THAT(refused.what(), AllOf(HasSubstr(std::to_string(count) + " elements"),
                                      HasSubstr("of 8 bytes"), HasSubstr("overflows")));
  }
}

}  // namespace
}  // namespace launchwatch
