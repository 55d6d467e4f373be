// Counting launches: how many kernels, of which names, a piece of work launches. What a test
// asserts to catch a pass that silently launches more (an unfused op, a kernel per element).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <launchwatch/observe.hpp>

namespace launchwatch {

/// How many launches of each kernel were reported.
///
/// Kernels are kept by full name in the order first launched; `of` and `by_brief_name` look them
/// up by any level of name_format, so a test can say "softmax" instead of a namespaced template.
class launch_counts {
 public:
  /// One kernel and how many times it was launched.
  struct entry {
    /// The kernel's full name.
    std::string kernel;
    /// How many times it was launched.
    std::size_t count = 0;
    friend bool operator==(const entry&, const entry&) = default;
  };

  /// No launches.
  launch_counts() = default;
  /// Counts given as entries (kernels must be distinct). For building expectations by hand.
  explicit launch_counts(std::vector<entry> kernels);

  /// All launches.
  std::size_t total() const noexcept { return total_; }

  /// Launches of kernels whose full, balanced or brief name (see format_kernel_name) is `name`:
  /// `of("softmax")` counts every instantiation of a kernel named softmax.
  std::size_t of(std::string_view name) const;

  /// Each kernel with its count, in the order first launched.
  const std::vector<entry>& kernels() const noexcept { return kernels_; }

  /// Counts keyed by brief name, instantiations of one kernel added together: what a test usually
  /// compares against.
  std::map<std::string, std::size_t> by_brief_name() const;

  friend bool operator==(const launch_counts&, const launch_counts&) = default;

 private:
  std::vector<entry> kernels_;
  std::size_t total_ = 0;
};

/// Prints the counts as `launched 7 kernels: layer_norm x2, softmax x1, ...` (balanced names, in
/// the order first launched), so a failing assertion says what was launched.
std::ostream& operator<<(std::ostream& out, const launch_counts& counts);

namespace detail {
class launch_counter;
}

/// Counts the launches reported while it lives.
///
/// Installs a names-only observer (no timing), so counting adds one lock and a map lookup per
/// launch and leaves the kernels running as they would, the profiling logger on or not (the logger
/// reads its measurements on its own thread). Like every observation, it replaces the
/// installed observer while it lives. Wrap the counted work in a dry_run_scope to count without
/// running anything.
///
/// Thread safety: counts launches from every thread; `counts` may be called at any time.
class [[nodiscard]] launch_counting {
 public:
  /// Installs the counting observer.
  launch_counting();
  /// Puts back the observer it replaced, if any.
  ~launch_counting();
  launch_counting(const launch_counting&) = delete;
  launch_counting& operator=(const launch_counting&) = delete;
  launch_counting(launch_counting&&) = delete;
  launch_counting& operator=(launch_counting&&) = delete;

  /// The launches counted so far.
  launch_counts counts() const;

 private:
  std::shared_ptr<detail::launch_counter> counter_;
  launch_observation observation_;
};

/// Runs `fn` and returns how many launches of each kernel it reported, on any thread.
///
/// `EXPECT_EQ(count_launches([&] { block.forward(x); }).total(), 12);` See
/// launchwatch/attribute/testing.hpp for GoogleTest matchers over the result.
template <class F>
launch_counts count_launches(F&& fn) {
  launch_counting counting;
  std::forward<F>(fn)();
  return counting.counts();
}

}  // namespace launchwatch
