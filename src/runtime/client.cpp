// The client and its launch path (DESIGN.md §3), common to every backend.

#include <launchwatch/runtime/client.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <launchwatch/dry_run.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/logger.hpp>
#include <launchwatch/observe.hpp>

#include "runtime/allocation.hpp"
#include "runtime/backend.hpp"
#include "runtime/graph_state.hpp"

namespace launchwatch {
namespace detail {
namespace {

std::string label(const device& d) { return fmt::format("{}:{}", d.backend(), d.index()); }

// ---------------------------------------------------------------------------------------------
// Streams per thread.

/// This thread's default stream on each device it has used, keyed by device id (never reused, so an
/// entry can never be mistaken for another device's). A deque so references stay valid as it grows.
/// Released when the thread exits; a stream drains its queue before it goes.
struct thread_streams {
  std::deque<std::pair<std::uint64_t, std::shared_ptr<stream>>> entries;

  const std::shared_ptr<stream>* find(std::uint64_t device_id) const noexcept {
    for (const auto& [id, s] : entries) {
      if (id == device_id) return &s;
    }
    return nullptr;
  }
};

thread_local thread_streams this_thread_streams;

// ---------------------------------------------------------------------------------------------
// Allocations referenced by a capture window still open, per stream id.

struct capture_book {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, std::vector<std::shared_ptr<allocation>>> open;

  static capture_book& get() {
    static auto* const instance = new capture_book;
    return *instance;
  }

  void reset(std::uint64_t stream_id) {
    std::lock_guard lock{mutex};
    open.erase(stream_id);
  }

  std::vector<std::shared_ptr<allocation>> take(std::uint64_t stream_id) {
    std::lock_guard lock{mutex};
    const auto it = open.find(stream_id);
    if (it == open.end()) return {};
    auto taken = std::move(it->second);
    open.erase(it);
    std::sort(taken.begin(), taken.end());
    taken.erase(std::unique(taken.begin(), taken.end()), taken.end());
    return taken;
  }
};

// ---------------------------------------------------------------------------------------------
// The allocations one launch references: on the stack for the common case of a few spans.

class referenced_allocations {
 public:
  void push(std::shared_ptr<allocation> a) {
    if (count_ < inline_.size()) {
      inline_[count_++] = std::move(a);
    } else {
      more_.push_back(std::move(a));
    }
  }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < count_; ++i) f(inline_[i]);
    for (const auto& a : more_) f(a);
  }
  bool empty() const noexcept { return count_ == 0; }

 private:
  std::array<std::shared_ptr<allocation>, 8> inline_{};
  std::size_t count_ = 0;
  std::vector<std::shared_ptr<allocation>> more_;
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
    auto found = allocation::find(span.owner.allocation);
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
    references.push(std::move(found));
  }
}

launch_info describe(const launch_descriptor& launch, const device& d, const stream& s,
                     launch_mode mode, bool capturing) {
  launch_info info;
  info.kernel = launch.name;
  info.backend = d.backend();
  info.device = d.index();
  info.stream = s.id();
  info.cube_count = {launch.geometry.count.x, launch.geometry.count.y, launch.geometry.count.z};
  info.cube_dim = {launch.geometry.dim.x, launch.geometry.dim.y, launch.geometry.dim.z};
  info.dry_run = mode == launch_mode::skip;
  info.capturing = capturing;
  return info;
}

/// Submits a launch bracketed by a measurement, or, under a dry run, prepares it bracketed by host
/// time: a duration measured over a dry launch is the preparation, with no kernel under it.
profiled_submission bracket(stream& s, const launch_descriptor& launch, launch_mode mode) {
  if (mode == launch_mode::skip) {
    const auto start = std::chrono::steady_clock::now();
    s.prepare(launch);
    const auto end = std::chrono::steady_clock::now();
    return profiled_submission{0, profile_duration::from_system_time(start, end), {}};
  }
  return s.submit_profiled(launch);
}

profile_duration no_measurement() {
  return profile_duration{[]() noexcept -> std::optional<profile_ticks> { return std::nullopt; },
                          timing_method::system};
}

[[noreturn]] void refuse_while_capturing(const char* what) {
  throw capture_error{fmt::format(
      "{} refused: this thread's stream is recording a graph capture, whose launches have not run "
      "and will not until the graph is replayed; end the capture (end_capture, or return from the "
      "function given to capture) first",
      what)};
}

}  // namespace
}  // namespace detail

// -----------------------------------------------------------------------------------------------
// client

client::client(std::shared_ptr<detail::device> device) : device_{std::move(device)} {
  if (!device_) {
    throw std::invalid_argument{"launchwatch::client needs a device, and was given a null one"};
  }
}

const std::shared_ptr<detail::stream>& client::current_stream() const {
  if (pinned_) return pinned_;
  auto& streams = detail::this_thread_streams;
  if (const auto* found = streams.find(device_->id())) return *found;
  streams.entries.emplace_back(device_->id(), device_->create_stream());
  return streams.entries.back().second;
}

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
  const bool capturing = on->capturing();

  // 4. Tell the observer. The launch_info is built only when one is installed.
  if (launch_path::is_observing()) {
    launch_path::notify_launch(describe(launch, *device_, *on, mode, capturing));
  }

  // 5. Time it if the logger or the observer asks, and submit.
  auto& logger = profiling_logger::instance();
  const profile_level level = logger.level();
  std::uint64_t point = 0;
  if (level > profile_level::execution_only) {
    auto submitted = bracket(*on, launch, mode);
    point = submitted.point;
    const auto info = describe(launch, *device_, *on, mode, capturing);
    if (submitted.profile && !launch_path::is_observing()) {
      // Nobody else wants this measurement: the logger's writer reads it off the launch path, and
      // the kernels keep running back to back.
      logger.record(info, std::move(*submitted.profile));
    } else if (submitted.profile) {
      // An observer and the logger both want it, and a measurement is read once: read here, tell
      // the observer, hand the same reading on (behaviour 7).
      launch_path::warn_logger_takes_deferred_measurements();
      auto reading = launch_path::read_and_notify_timed(launch.name, std::move(*submitted.profile));
      logger.record(info, std::move(reading));
    } else {
      launch_path::warn_profile_refused(launch.name, submitted.refusal);
      // Still written, as untimed: the log lists every launch, and a zero would lie.
      logger.record(info, no_measurement());
    }
  } else if (launch_path::timing_wanted()) {
    auto submitted = bracket(*on, launch, mode);
    point = submitted.point;
    if (submitted.profile) {
      launch_path::notify_profiled(launch.name, std::move(*submitted.profile));
    } else {
      launch_path::warn_profile_refused(launch.name, submitted.refusal);
    }
  } else if (mode == launch_mode::skip) {
    on->prepare(launch);
  } else {
    point = on->submit(launch);
  }
  if (level == profile_level::execution_only) {
    logger.record_execution(describe(launch, *device_, *on, mode, capturing));
  }

  // A read of a buffer waits for the launches that referenced it; a graph keeps the buffers its
  // recorded launches reference. Point 0 on a real launch means the stream recorded it.
  if (mode == launch_mode::skip || references.empty()) return;
  if (point != 0) {
    references.for_each([&](const std::shared_ptr<allocation>& a) { a->add_use(on, point); });
  } else {
    auto& book = capture_book::get();
    std::lock_guard lock{book.mutex};
    auto& kept = book.open[on->id()];
    references.for_each([&](const std::shared_ptr<allocation>& a) { kept.push_back(a); });
  }
}

std::shared_ptr<detail::allocation> client::allocate_bytes(std::size_t bytes, const void* initial,
                                                           void*& data, span_owner& owner) const {
  const auto& on = current_stream();
  if (on->capturing()) detail::refuse_while_capturing("creating a buffer");
  void* memory = device_->allocate(std::max<std::size_t>(bytes, 1), *on);
  std::shared_ptr<detail::allocation> record;
  try {
    record = std::make_shared<detail::allocation>(device_, memory, bytes);
  } catch (...) {
    device_->deallocate(memory, bytes, {});
    throw;
  }
  if (bytes > 0) {
    if (initial != nullptr) {
      device_->copy_to_device(memory, initial, bytes, *on);
    } else {
      device_->zero(memory, bytes, *on);
    }
  }
  data = memory;
  owner = span_owner{device_->id(), record->id};
  return record;
}

void client::read_bytes(const std::shared_ptr<detail::allocation>& memory, const void* data,
                        void* out, std::size_t bytes) const {
  if (!memory) return;  // A default-constructed buffer holds nothing.
  if (memory->owner != device_) {
    throw invalid_launch{fmt::format(
        "client::read: the buffer belongs to {}, and this client to {}; read it through a client "
        "of its own device",
        detail::label(*memory->owner), detail::label(*device_))};
  }
  const auto& on = current_stream();
  if (on->capturing()) detail::refuse_while_capturing("client::read");
  const auto uses = memory->uses();
  for (const auto& use : uses) use.on->wait(use.point);
  for (const auto& use : uses) {
    if (auto failure = use.on->take_failure()) std::rethrow_exception(failure);
  }
  if (bytes > 0) device_->copy_to_host(out, data, bytes, *on);
}

void client::sync() const {
  std::exception_ptr failure;
  const std::shared_ptr<detail::stream>* on = &pinned_;
  if (!pinned_) on = detail::this_thread_streams.find(device_->id());
  if (on != nullptr && *on) {
    if ((*on)->capturing()) detail::refuse_while_capturing("client::sync");
    (*on)->wait((*on)->last_point());
    failure = (*on)->take_failure();
  }
  auto& logger = profiling_logger::instance();
  if (logger.level() > profile_level::execution_only) logger.write_summary();
  if (failure) std::rethrow_exception(failure);
}

void client::begin_capture() const {
  const auto& on = current_stream();
  on->begin_capture();
  detail::capture_book::get().reset(on->id());
}

graph client::end_capture() const {
  const auto& on = current_stream();
  auto recorded = on->end_capture();
  auto state = std::make_shared<detail::graph_state>();
  state->on = on;
  state->recorded = std::move(recorded);
  state->references = detail::capture_book::get().take(on->id());
  return graph{std::move(state)};
}

void client::abandon_capture() const noexcept {
  try {
    const auto& on = current_stream();
    if (on->capturing()) (void)on->end_capture();
    detail::capture_book::get().reset(on->id());
  } catch (...) {
    // Abandoning runs while another exception propagates; that one is what the caller needs.
  }
}

bool client::capturing() const {
  if (pinned_) return pinned_->capturing();
  const auto* on = detail::this_thread_streams.find(device_->id());
  return on != nullptr && (*on)->capturing();
}

client client::pinned() const {
  client copy{device_};
  copy.pinned_ = device_->create_stream();
  return copy;
}

std::uint64_t client::stream_id() const { return current_stream()->id(); }

std::string_view client::backend() const noexcept { return device_->backend(); }

int client::device_index() const noexcept { return device_->index(); }

std::string client::device_name() const { return device_->name(); }

// -----------------------------------------------------------------------------------------------
// graph

void graph::replay() const {
  if (!state_ || !state_->recorded || state_->recorded->size() == 0) return;
  auto& on = state_->on;
  if (on->capturing()) {
    throw capture_error{
        "graph::replay refused: the stream this graph replays on is recording a capture now; "
        "replay it after that capture ends"};
  }
  const std::uint64_t point = state_->recorded->replay(*on);
  for (const auto& a : state_->references) a->add_use(on, point);
}

std::size_t graph::size() const noexcept {
  return state_ && state_->recorded ? state_->recorded->size() : 0;
}

}  // namespace launchwatch
