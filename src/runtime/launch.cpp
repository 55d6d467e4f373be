// A client's launches: validation (step 2 of docs/design.md §3), then the core launch path, handed what
// only the runtime can do for it: submitting to the backend and tracking the buffers the launch uses.

#include <launchwatch/runtime/client.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <launchwatch/dry_run.hpp>
#include <launchwatch/launch_path.hpp>

#include "runtime/allocation.hpp"
#include "runtime/backend.hpp"

namespace launchwatch {
namespace detail {
namespace {

// ---------------------------------------------------------------------------------------------
// The allocations one launch references: on the stack for the common case of a few spans.

class referenced_allocations {
 public:
  void push(allocation* a) {
    if (count_ < inline_.size()) {
      inline_[count_++] = a;
    } else {
      more_.push_back(a);
    }
  }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < count_; ++i) f(*inline_[i]);
    for (auto* a : more_) f(*a);
  }
  bool empty() const noexcept { return count_ == 0; }

 private:
  std::array<allocation*, 8> inline_{};
  std::size_t count_ = 0;
  std::vector<allocation*> more_;
};

// ---------------------------------------------------------------------------------------------
// Validation: step 2 of the launch path. Everything here throws before anything is reported.

std::string extents(std::uint32_t x, std::uint32_t y, std::uint32_t z) {
  return fmt::format("{}x{}x{}", x, y, z);
}

void validate_geometry(const device& d, const launch_descriptor& launch) {
  const auto& limits = d.limits();
  const auto& dim = launch.geometry.dim;
  const auto& count = launch.geometry.count;
  const auto& max_dim = limits.max_cube_dim;
  const auto& max_count = limits.max_cube_count;
  if (dim.x > max_dim.x || dim.y > max_dim.y || dim.z > max_dim.z) {
    throw invalid_launch{fmt::format(
        "launch of `{}` rejected: cube_dim {} exceeds {}'s limit of {} units per cube along x, y "
        "and z; use fewer units per cube and more cubes",
        launch.name, extents(dim.x, dim.y, dim.z), label(d),
        extents(max_dim.x, max_dim.y, max_dim.z))};
  }
  if (dim.total() > limits.max_units_per_cube) {
    throw invalid_launch{fmt::format(
        "launch of `{}` rejected: cube_dim {} holds {} units, over {}'s limit of {} units per "
        "cube; use fewer units per cube and more cubes",
        launch.name, extents(dim.x, dim.y, dim.z), dim.total(), label(d),
        limits.max_units_per_cube)};
  }
  if (count.x > max_count.x || count.y > max_count.y || count.z > max_count.z) {
    throw invalid_launch{fmt::format(
        "launch of `{}` rejected: cube_count {} exceeds {}'s limit of {} cubes along x, y and z; "
        "give each unit more work or split the launch",
        launch.name, extents(count.x, count.y, count.z), label(d),
        extents(max_count.x, max_count.y, max_count.z))};
  }
}

void validate_spans(const device& d, const launch_descriptor& launch,
                    referenced_allocations& references) {
  std::size_t index = 0;
  for (const span_ref& span : launch.spans) {
    ++index;
    if (span.owner == span_owner{}) {
      if (span.data == nullptr && span.bytes == 0) continue;  // A default span views nothing.
      throw invalid_launch{fmt::format(
          "launch of `{}` rejected: its span #{} views {} bytes but belongs to no buffer; take "
          "spans from buffer::view(), which tags them with their device",
          launch.name, index, span.bytes)};
    }
    allocation* const found = allocation::find(span.owner.allocation);
    if (span.owner.device != d.id()) {
      throw invalid_launch{fmt::format(
          "launch of `{}` on {} rejected: its span #{} views a buffer of {}; a kernel can only use "
          "buffers created through a client of the device it is launched on (copy the data over "
          "with read() and create())",
          launch.name, label(d), index,
          found ? label(*found->owner) : std::string{"another device"})};
    }
    if (!found) {
      throw invalid_launch{fmt::format(
          "launch of `{}` rejected: its span #{} views a buffer that no longer exists; keep the "
          "buffer alive until the launches that use it are issued",
          launch.name, index)};
    }
    const auto base = reinterpret_cast<std::uintptr_t>(found->memory);
    const auto start = reinterpret_cast<std::uintptr_t>(span.data);
    if (start < base || start - base > found->bytes || span.bytes > found->bytes - (start - base)) {
      throw invalid_launch{fmt::format(
          "launch of `{}` rejected: its span #{} views bytes [{}, {}) of a buffer of {} bytes; "
          "take spans from buffer::view(offset, count), which checks the range",
          launch.name, index, static_cast<std::int64_t>(start - base),
          static_cast<std::int64_t>(start - base + span.bytes), found->bytes)};
    }
    references.push(found);
  }
}

launch_info describe(const launch_descriptor& launch, const device& d, const stream& s,
                     launch_mode mode) {
  launch_info info;
  info.kernel = launch.name;
  info.backend = d.backend();
  info.device = d.index();
  info.stream = s.id();
  info.cube_count = {launch.geometry.count.x, launch.geometry.count.y, launch.geometry.count.z};
  info.cube_dim = {launch.geometry.dim.x, launch.geometry.dim.y, launch.geometry.dim.z};
  info.dry_run = mode == launch_mode::skip;
  info.capturing = s.capturing();
  info.collective = launch.collective;
  return info;
}

/// What only the runtime can do for one launch: hand it to the stream (or, under a dry run, prepare
/// it, or record it into an open capture, since recording runs nothing and the graph's real
/// replays must find it there), and note the buffers it uses the moment the stream has it.
class client_submission final : public launch_path::submitter {
 public:
  client_submission(const std::shared_ptr<stream>& on, const launch_descriptor& launch,
                    launch_mode mode, const referenced_allocations& references) noexcept
      : on_{on}, launch_{launch}, mode_{mode}, references_{references} {}

  void submit() override {
    if (mode_ == launch_mode::skip) {
      if (on_->record(launch_)) {
        track(0);
      } else {
        on_->prepare(launch_);
      }
      return;
    }
    track(on_->submit(launch_));
  }

  launch_path::measured_submission submit_profiled(launch_path::read_when when) override {
    if (mode_ == launch_mode::skip) {
      if (on_->record(launch_)) {
        track(0);
        return {std::nullopt, launch_path::capture_refusal};
      }
      // A duration measured over a dry launch is the preparation, with no kernel under it.
      const auto start = std::chrono::steady_clock::now();
      on_->prepare(launch_);
      const auto end = std::chrono::steady_clock::now();
      return {profile_duration::from_system_time(start, end), {}};
    }
    auto submitted = on_->submit_profiled(launch_, when);
    track(submitted.point);
    return {std::move(submitted.profile), submitted.refusal};
  }

 private:
  /// A read of a buffer waits for the launches that referenced it; a graph keeps the buffers its
  /// recorded launches reference. Point 0 means the stream recorded the launch.
  void track(std::uint64_t point) {
    if (references_.empty()) return;
    if (point != 0) {
      references_.for_each([&](allocation& a) { a.add_use(on_, point); });
      return;
    }
    std::lock_guard lock{on_->captured.mutex};
    references_.for_each([&](allocation& a) { on_->captured.kept.push_back(a.shared_from_this()); });
  }

  const std::shared_ptr<stream>& on_;
  const launch_descriptor& launch_;
  const launch_mode mode_;
  const referenced_allocations& references_;
};

}  // namespace
}  // namespace detail

void client::issue(const detail::launch_descriptor& launch) const {
  using namespace detail;
  // 1. An empty grid launches and reports nothing (launch<K> returned already; kept for callers
  //    that reach here directly).
  if (launch.geometry.count.empty() || launch.geometry.dim.empty()) return;

  const std::shared_ptr<stream>& on = current_stream();

  // 2. A bad configuration throws before anything is reported.
  referenced_allocations references;
  validate_geometry(*device_, launch);
  validate_spans(*device_, launch, references);
  on->validate(launch);

  // 3. The mode is decided here: only the issuing thread knows whether it is in a real_run_scope.
  const launch_mode mode = current_launch_mode();
  client_submission source{on, launch, mode, references};

  // 4-5. Report, time and route through the one launch path; with nothing watching, just submit,
  //      and build nothing for it.
  if (!launch_path::watched()) [[likely]] {
    source.submit();
    return;
  }
  launch_path::issue(describe(launch, *device_, *on, mode), source);
}

}  // namespace launchwatch
