// The interface a backend implements: a device and its streams.
//
// ## Contract for backend implementers
//
// The runtime (src/runtime) owns everything common to backends: a launch's checks in the order of
// docs/design.md §3 (empty grid, validation against `device::limits()` and span owners, launch mode),
// handing it to the launch path (include/launchwatch/launch_path.hpp: observer notification and
// profile routing to observers and the profiling logger, decided there), buffers and the tracking
// of which launches referenced which allocation, per-thread and pinned streams, and graphs as
// public objects. A backend only runs things, and answers:
//
// - `device`: one device of one backend. Created once per (backend, index) and kept for the process
//   (a backend caches it); the first time, call `start_device_runtime()` before handing it out (it
//   starts the profiling logger, which may throw configuration_error: let it propagate and don't
//   cache the device). Build a client from it with `client{std::shared_ptr<device>}`.
//   Memory calls take the stream they are ordered on. `allocate`, `zero` and `copy_to_device` return
//   once the memory may be used by later work on any stream and the host source may be reused;
//   `copy_to_host` returns once the host destination holds the data (the runtime has already waited
//   for every launch that referenced the source); `deallocate` frees once every `after` point has
//   passed and must not throw.
// - `stream`: an in-order queue of work. Every call comes from a thread that holds a reference to
//   the stream; several threads may call one stream at once only through a pinned client, so a
//   stream guards itself. Each `submit*` returns an *ordering point*: a number, increasing per
//   stream from 1, that `wait` blocks on (0 = nothing to wait for, returned for a launch recorded by
//   a capture). `wait` must not throw a kernel's failure: failures are kept with the ordering point
//   of the launch that failed (the earliest it can have been, when the device cannot say which);
//   `failure_through(point)` shows the first one at or before `point` without taking it (a read
//   reports a failure of what it waited for, and the thread that launched it still sees it), and
//   `take_failure` hands over the first one not yet taken (as a `kernel_failure` naming the kernel
//   when it is known), after which the stream stays usable where the device allows. Keep them in a
//   `stream_failure`, which answers both.
// - Launches: `validate` adds backend-specific checks to the runtime's (CUDA: the kernel was compiled
//   as CUDA, its attributes fit) and throws invalid_launch; `prepare` does what a launch needs short
//   of running (load a module) for a dry run; `submit` queues the launch; `submit_profiled` queues it
//   bracketed by a measurement and returns the unread `profile_duration` (method `device` when both
//   ends are stamped on the device clock and nothing waits), or a refusal with its reason when the
//   stream cannot measure (it is capturing, checked under the stream's own lock, so a capture that
//   another thread opens on a pinned stream never records a live measurement; the reason is then
//   `launch_path::capture_refusal`). A refused launch is still submitted (recorded). `record` adds
//   a launch to an open capture window (a dry run inside a capture records, since recording runs
//   nothing) and says false, doing nothing, when none is open.
// - Capture: between `begin_capture` and `end_capture`, `submit*` record instead of running and
//   return point 0. `end_capture` returns a graph that `replay` runs, in order, on any stream of the
//   same device, returning that stream's ordering point after the replay. The runtime refuses reads
//   and syncs on a capturing stream before they reach the backend.
// - Ids: `device::id()` and `stream::id()` are process-unique, assigned by the base classes.
// - Errors, in one voice: a launch the backend refuses throws invalid_launch worded by
//   `launch_rejected` ("launch of `k` on vulkan:0 rejected: ..."), as the runtime's own checks are;
//   a kernel that failed is kept as `kernel_failed` words it; anything else starts "launchwatch: "
//   and names the device by its `label`. Each says what was wrong and what to do.
// - The launch itself arrives as a `launch_descriptor` (include/launchwatch/runtime/kernel.hpp):
//   public, because `client::launch<K>` builds it inline in the caller's translation unit, which is
//   what lets it carry `&cuda_entry<K>` exactly when nvcc compiled that unit (null otherwise; a CUDA
//   stream's `validate` refuses such a launch, saying to compile that file as CUDA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <launchwatch/launch_path.hpp>
#include <launchwatch/profile.hpp>
#include <launchwatch/runtime/geometry.hpp>
#include <launchwatch/runtime/kernel.hpp>

namespace launchwatch::detail {

class stream;
struct allocation;

/// The allocations referenced by the launches an open capture window recorded: kept alive until
/// the window closes (the graph then keeps them) or the stream goes, whichever comes first, so a
/// capture that fails or is abandoned, or whose thread ends mid-window, keeps nothing alive. The
/// runtime's bookkeeping, kept on the stream because it lives exactly as long as the window can.
struct capture_references {
  std::mutex mutex;
  std::vector<std::shared_ptr<allocation>> kept;
};

/// The ordering point of the last launch on a stream that referenced each allocation, by
/// allocation id: the runtime's, kept on the stream so recording a use writes only to the issuing
/// stream's own memory (see allocation::add_use), never to a line every launching thread shares.
struct stream_uses {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, std::uint64_t> last_point;
};

/// A device's launch limits; the runtime rejects a launch over any of them with invalid_launch.
struct device_limits {
  /// Units one cube may hold, over all three axes.
  std::uint64_t max_units_per_cube = 1024;
  /// Units per cube along each axis.
  ::launchwatch::cube_dim max_cube_dim{1024u, 1024u, 64u};
  /// Cubes along each axis.
  ::launchwatch::cube_count max_cube_count{2147483647u, 65535u, 65535u};
};

/// A stream's progress marker: `on` has passed `point` once every launch it was given up to the one
/// that returned `point` has finished.
struct stream_point {
  stream* on = nullptr;
  std::uint64_t point = 0;
};

/// What `stream::submit_profiled` returns: the ordering point of the launch, and either its
/// measurement, unread, or why none could be taken.
struct profiled_submission {
  std::uint64_t point = 0;
  std::optional<profile_duration> profile;
  /// Why the stream refused to measure, when `profile` is empty (static storage).
  std::string_view refusal;
};

/// A stream's first kernel failure not yet taken, with the ordering point of the launch it came
/// from (the earliest it can have come from, when the device cannot say which): what
/// `stream::take_failure` and `stream::failure_through` answer, kept alike by every backend.
///
/// Thread safety: none of its own; the owning stream calls it under the lock that guards it.
class stream_failure {
 public:
  /// Whether a failure is kept. A later one is not: the first not yet taken is the one reported.
  explicit operator bool() const noexcept { return failure_ != nullptr; }
  /// Keeps `failure`, from the launch at ordering point `point`, unless one is kept already.
  void keep(std::exception_ptr failure, std::uint64_t point) noexcept {
    if (failure_) return;
    failure_ = std::move(failure);
    point_ = point;
  }
  /// Hands over the kept failure, or null, and keeps none.
  std::exception_ptr take() noexcept { return std::exchange(failure_, nullptr); }
  /// The kept failure if its launch is at or before `point`, or null; left in place.
  std::exception_ptr through(std::uint64_t point) const noexcept {
    return failure_ && point_ <= point ? failure_ : nullptr;
  }

 private:
  std::exception_ptr failure_;
  std::uint64_t point_ = 0;
};

/// A recorded sequence of launches that can be run again.
class recorded_graph {
 public:
  virtual ~recorded_graph() = default;
  /// How many launches were recorded.
  virtual std::size_t size() const noexcept = 0;
  /// Runs every recorded launch, in order, on `on` (a stream of the device that recorded it) and
  /// returns `on`'s ordering point after the last one. Not reported to observers.
  virtual std::uint64_t replay(stream& on) = 0;
};

/// One in-order queue of work on a device. See the contract above.
class stream {
 public:
  virtual ~stream() = default;
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  /// Process-unique, never reused: observers key device tracks by it.
  std::uint64_t id() const noexcept { return id_; }

  /// Backend-specific checks of a launch; throws invalid_launch saying what is wrong.
  virtual void validate(const launch_descriptor& launch) = 0;
  /// Everything a launch needs short of running it, for a dry run.
  virtual void prepare(const launch_descriptor& launch) = 0;
  /// Queues the launch; returns its ordering point (0 while capturing).
  virtual std::uint64_t submit(const launch_descriptor& launch) = 0;
  /// Queues the launch bracketed by a measurement, or records it and refuses the measurement.
  /// `when` says whether the measurement will be read right after the launch or kept for later.
  virtual profiled_submission submit_profiled(const launch_descriptor& launch,
                                              launch_path::read_when when) = 0;
  /// Records the launch into the capture window open on this stream and returns true; returns
  /// false, doing nothing, when none is open.
  virtual bool record(const launch_descriptor& launch) = 0;

  /// Blocks until the stream has passed `point`. Does not throw a kernel's failure.
  virtual void wait(std::uint64_t point) = 0;
  /// The ordering point of the last work submitted (0 if none): `wait(last_point())` is a sync.
  virtual std::uint64_t last_point() const noexcept = 0;
  /// Whether the stream has certainly passed `point`, without waiting. Lets the runtime forget
  /// finished launches; a backend that cannot tell cheaply may keep the default, which only says so
  /// for point 0.
  virtual bool passed(std::uint64_t point) const noexcept { return point == 0; }
  /// The first kernel failure not yet taken, or null; taking it clears it.
  virtual std::exception_ptr take_failure() noexcept = 0;
  /// The first failure not yet taken whose launch is at or before `point`, or null; left in place.
  virtual std::exception_ptr failure_through(std::uint64_t point) const noexcept = 0;

  /// Starts recording; throws capture_error if already recording.
  virtual void begin_capture() = 0;
  /// Stops recording and returns what was recorded; throws capture_error if not recording.
  virtual std::unique_ptr<recorded_graph> end_capture() = 0;
  /// Whether a capture window is open. Safe from any thread.
  virtual bool capturing() const noexcept = 0;

  /// The runtime's record of what the open window's launches reference (not the backend's).
  capture_references captured;
  /// The runtime's record of which allocations this stream's launches referenced, and when.
  stream_uses uses;

 protected:
  stream();

 private:
  std::uint64_t id_;
};

/// One device of one backend. See the contract above.
class device {
 public:
  virtual ~device() = default;
  device(const device&) = delete;
  device& operator=(const device&) = delete;

  /// Process-unique, never reused: the owner tag carried by every span of this device's memory.
  std::uint64_t id() const noexcept { return id_; }

  /// "cpu", "cuda" or "vulkan" (static storage): launch_info::backend.
  virtual std::string_view backend() const noexcept = 0;
  /// The device's index within its backend.
  virtual int index() const noexcept = 0;
  /// A name for people ("cpu (16 threads)", "NVIDIA H200").
  virtual std::string name() const = 0;
  /// The launch limits the runtime validates against.
  virtual const device_limits& limits() const noexcept = 0;

  /// `bytes` of device memory (at least 1 byte is asked for), ordered on `on`.
  virtual void* allocate(std::size_t bytes, stream& on) = 0;
  /// Frees `memory` once every point in `after` has passed. Must not throw.
  virtual void deallocate(void* memory, std::size_t bytes,
                          std::span<const stream_point> after) noexcept = 0;
  /// Fills `bytes` at `memory` with zeros.
  virtual void zero(void* memory, std::size_t bytes, stream& on) = 0;
  /// Copies host memory to the device; returns once `source` may be reused.
  virtual void copy_to_device(void* destination, const void* source, std::size_t bytes,
                              stream& on) = 0;
  /// Copies device memory to the host; returns once `destination` holds the data.
  virtual void copy_to_host(void* destination, const void* source, std::size_t bytes,
                            stream& on) = 0;

  /// A new stream of this device; it keeps the device alive.
  virtual std::shared_ptr<stream> create_stream() = 0;

 protected:
  device();

 private:
  std::uint64_t id_;
};

/// "backend:index" (`cpu:0`, `cuda:1`): how the runtime's and the backends' messages name a device.
std::string label(const device& d);

/// The message of the invalid_launch a backend throws for a launch of `kernel` on `d` it refuses:
/// "launch of `kernel` on cpu:0 rejected: " then `why`, which says what is wrong and what to do.
std::string launch_rejected(std::string_view kernel, const device& d, std::string_view why);

/// A kernel that failed while running, as a stream keeps it: a kernel_failure naming `kernel`
/// on stream `stream_id` of `d`, with `cause`, and saying the stream stays usable. Never throws:
/// if the message cannot be made (out of memory), `fallback` is kept, or, when it is null, the
/// exception that stopped the message.
std::exception_ptr kernel_failed(std::string_view kernel, const device& d, std::uint64_t stream_id,
                                 std::string_view cause,
                                 std::exception_ptr fallback = nullptr) noexcept;

/// Starts what a device runtime needs once per device (the profiling logger, which reads
/// LAUNCHWATCH_PROFILE and LAUNCHWATCH_LOG). Call before handing out a new device's first client;
/// throws configuration_error on a bad setting.
void start_device_runtime();

}  // namespace launchwatch::detail
