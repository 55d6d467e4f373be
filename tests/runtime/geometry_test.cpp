// The shape of a launch: extents, units and the CPU entry's unit loop.

#include <launchwatch/runtime/geometry.hpp>
#include <launchwatch/runtime/kernel.hpp>

#include <cstdint>
#include <limits>
#include <set>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

namespace launchwatch {
namespace {

static_assert(std::is_trivially_copyable_v<unit>);
static_assert(std::is_trivially_copyable_v<cube_count>);
static_assert(std::is_trivially_copyable_v<cube_dim>);

// Usable in constant expressions, as a CUDA kernel entry needs.
constexpr unit probe{{1, 0, 0}, {2, 0, 0}, cube_dim{4u}, cube_count{3u}};
static_assert(probe.absolute_pos() == 6);

TEST(CubeCount, AcceptsAnyIntegerType) {
  const int blocks = 4;
  const std::size_t wide = 5;
  const long deep = 6;
  EXPECT_EQ(cube_count(blocks, wide, deep), cube_count(4u, 5u, 6u));
  EXPECT_EQ(cube_dim{blocks}, cube_dim(4u, 1u, 1u));
}

TEST(CubeCount, RejectsANegativeExtentSayingSo) {
  const int blocks = -1;
  try {
    (void)cube_count{blocks};
    FAIL() << "a negative cube count was accepted";
  } catch (const invalid_launch& error) {
    EXPECT_NE(std::string{error.what()}.find("negative"), std::string::npos) << error.what();
  }
}

TEST(CubeDim, RejectsAnExtentThatDoesNotFit32Bits) {
  const std::uint64_t huge = std::uint64_t{1} << 32;
  EXPECT_THROW((void)cube_dim{huge}, invalid_launch);
  EXPECT_NO_THROW((void)cube_dim{huge - 1});
}

TEST(CubeCount, IsEmptyWhenAnyExtentIsZero) {
  EXPECT_TRUE((cube_count{0u, 1u, 1u}.empty()));
  EXPECT_TRUE((cube_count{1u, 1u, 0u}.empty()));
  EXPECT_FALSE((cube_count{1u, 1u, 1u}.empty()));
  EXPECT_EQ((cube_count{2u, 3u, 4u}.total()), 24u);
}

/// Records the absolute position of every unit it runs as.
struct record_positions {
  std::vector<std::uint64_t>* seen;
  void operator()(unit u) const { seen->push_back(u.absolute_pos()); }
};

TEST(CpuEntry, RunsEveryUnitOfTheGridOnceWithDistinctAbsolutePositions) {
  std::vector<std::uint64_t> seen;
  const record_positions kernel{&seen};
  const detail::launch_geometry geometry{cube_count{3u, 2u, 2u}, cube_dim{4u, 2u, 3u}};
  detail::cpu_entry<record_positions>(&kernel, geometry, 0, geometry.count.total());
  const std::set<std::uint64_t> distinct(seen.begin(), seen.end());
  const std::uint64_t total = geometry.count.total() * geometry.dim.total();
  EXPECT_EQ(seen.size(), total);
  EXPECT_EQ(distinct.size(), total);
  EXPECT_EQ(*distinct.begin(), 0u);
  EXPECT_EQ(*distinct.rbegin(), total - 1);
}

TEST(CpuEntry, RunsOnlyTheCubesOfItsRange) {
  std::vector<std::uint64_t> seen;
  const record_positions kernel{&seen};
  const detail::launch_geometry geometry{cube_count{4u}, cube_dim{8u}};
  detail::cpu_entry<record_positions>(&kernel, geometry, 1, 3);
  ASSERT_EQ(seen.size(), 16u);
  EXPECT_EQ(seen.front(), 8u);
  EXPECT_EQ(seen.back(), 23u);
}

TEST(Unit, AbsolutePosOfAOneAxisLaunchIsCubeTimesDimPlusUnit) {
  const unit u{{5, 0, 0}, {7, 0, 0}, cube_dim{256u}, cube_count{10u}};
  EXPECT_EQ(u.absolute_pos(), 5u * 256u + 7u);
  EXPECT_EQ(u.unit_index(), 7u);
  EXPECT_EQ(u.cube_index(), 5u);
}

TEST(Unit, AbsolutePosIsSixtyFourBitsWide) {
  const unit u{{2'000'000'000u, 0, 0}, {1023, 0, 0}, cube_dim{1024u}, cube_count{2'147'483'647u}};
  EXPECT_EQ(u.absolute_pos(), 2'000'000'000ull * 1024ull + 1023ull);
}

}  // namespace
}  // namespace launchwatch
