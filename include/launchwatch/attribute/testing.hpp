// GoogleTest matchers over launch counts, for a user's own tests: assert how many kernels, of which
// names, a piece of work launches.
//
//   #include <launchwatch/attribute/testing.hpp>
//   using namespace launchwatch::testing;
//
//   const auto counts = launchwatch::count_launches([&] { block.forward(x); });
//   EXPECT_THAT(counts, LaunchedExactly(7));
//   EXPECT_THAT(counts, LaunchedKernel("softmax", 1));
//   EXPECT_THAT(counts, LaunchedKernel("matmul", ::testing::Le(4)));
//   EXPECT_THAT(counts, NeverLaunched("copy"));
//   EXPECT_THAT(counts, LaunchedKernels({{"layer_norm", 2}, {"matmul", 4}, {"softmax", 1}}));
//
// A name matches a kernel when it equals its full, balanced or brief name (see format_kernel_name),
// so tests name kernels as people do. A failing assertion prints every kernel launched and its
// count. This header includes gmock; link GTest::gmock.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>

#include <launchwatch/attribute/count.hpp>
#include <launchwatch/kernel_name.hpp>

namespace launchwatch::testing {

// Not `detail`: inside launchwatch::testing that name would hide launchwatch::detail from other
// test helpers included beside this header.
namespace count_matchers {

/// Whether `name` is `kernel`'s full, balanced or brief name.
inline bool names_kernel(const std::string& name, const std::string& kernel) {
  return name == kernel || name == format_kernel_name(kernel, name_format::balanced) ||
         name == format_kernel_name(kernel, name_format::brief);
}

class launched_total final : public ::testing::MatcherInterface<const launch_counts&> {
 public:
  explicit launched_total(::testing::Matcher<std::size_t> count) : count_{std::move(count)} {}

  bool MatchAndExplain(const launch_counts& counts,
                       ::testing::MatchResultListener* listener) const override {
    *listener << "it " << counts;
    return count_.Matches(counts.total());
  }
  void DescribeTo(std::ostream* os) const override {
    *os << "launched a number of kernels that ";
    count_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "launched a number of kernels that ";
    count_.DescribeNegationTo(os);
  }

 private:
  ::testing::Matcher<std::size_t> count_;
};

class launched_kernel final : public ::testing::MatcherInterface<const launch_counts&> {
 public:
  launched_kernel(std::string name, ::testing::Matcher<std::size_t> count)
      : name_{std::move(name)}, count_{std::move(count)} {}

  bool MatchAndExplain(const launch_counts& counts,
                       ::testing::MatchResultListener* listener) const override {
    const auto launched = counts.of(name_);
    *listener << "`" << name_ << "` was launched " << launched << " times; " << counts;
    return count_.Matches(launched);
  }
  void DescribeTo(std::ostream* os) const override {
    *os << "launched `" << name_ << "` a number of times that ";
    count_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "launched `" << name_ << "` a number of times that ";
    count_.DescribeNegationTo(os);
  }

 private:
  std::string name_;
  ::testing::Matcher<std::size_t> count_;
};

class launched_kernels final : public ::testing::MatcherInterface<const launch_counts&> {
 public:
  explicit launched_kernels(std::map<std::string, std::size_t> expected)
      : expected_{std::move(expected)} {}

  bool MatchAndExplain(const launch_counts& counts,
                       ::testing::MatchResultListener* listener) const override {
    bool matched = true;
    const char* separator = "";
    for (const auto& [name, count] : expected_) {
      const auto launched = counts.of(name);
      if (launched != count) {
        *listener << separator << "`" << name << "` was launched " << launched << " times, not "
                  << count;
        separator = "; ";
        matched = false;
      }
    }
    for (const auto& entry : counts.kernels()) {
      bool expected = false;
      for (const auto& [name, count] : expected_) expected = expected || names_kernel(name, entry.kernel);
      if (!expected) {
        *listener << separator << "`" << format_kernel_name(entry.kernel, name_format::brief)
                  << "` (" << entry.kernel << ") was launched " << entry.count
                  << " times and not expected";
        separator = "; ";
        matched = false;
      }
    }
    *listener << separator << "it " << counts;
    return matched;
  }
  void DescribeTo(std::ostream* os) const override {
    *os << "launched exactly ";
    describe(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "did not launch exactly ";
    describe(os);
  }

 private:
  void describe(std::ostream* os) const {
    const char* separator = "";
    for (const auto& [name, count] : expected_) {
      *os << separator << name << " x" << count;
      separator = ", ";
    }
    if (expected_.empty()) *os << "no kernels";
    *os << ", and nothing else";
  }

  std::map<std::string, std::size_t> expected_;
};

}  // namespace count_matchers

/// Matches counts whose total number of launches matches `count` (a number or a matcher such as
/// `::testing::Le(8)`).
template <class CountMatcher>
::testing::Matcher<const launch_counts&> LaunchedTotal(CountMatcher count) {
  return ::testing::MakeMatcher(
      new count_matchers::launched_total(::testing::MatcherCast<std::size_t>(std::move(count))));
}

/// Matches counts of exactly `count` launches in all.
inline ::testing::Matcher<const launch_counts&> LaunchedExactly(std::size_t count) {
  return LaunchedTotal(::testing::Eq(count));
}

/// Matches counts with no launch at all.
inline ::testing::Matcher<const launch_counts&> LaunchedNothing() { return LaunchedExactly(0); }

/// Matches counts in which the kernels named `name` (full, balanced or brief name; instantiations
/// added together) were launched a number of times that matches `count` (a number or a matcher).
template <class CountMatcher>
::testing::Matcher<const launch_counts&> LaunchedKernel(std::string name, CountMatcher count) {
  return ::testing::MakeMatcher(new count_matchers::launched_kernel(
      std::move(name), ::testing::MatcherCast<std::size_t>(std::move(count))));
}

/// Matches counts in which no kernel named `name` was launched.
inline ::testing::Matcher<const launch_counts&> NeverLaunched(std::string name) {
  return LaunchedKernel(std::move(name), ::testing::Eq(std::size_t{0}));
}

/// Matches counts in which each named kernel was launched exactly the given number of times and no
/// other kernel was launched: the whole launch profile of a piece of work in one assertion.
/// A kernel is covered by a name when the name is its full, balanced or brief name.
inline ::testing::Matcher<const launch_counts&> LaunchedKernels(
    std::initializer_list<std::pair<const std::string, std::size_t>> expected) {
  return ::testing::MakeMatcher(
      new count_matchers::launched_kernels(std::map<std::string, std::size_t>{expected}));
}

}  // namespace launchwatch::testing
