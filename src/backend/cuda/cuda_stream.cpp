// One CUDA stream: launches from the issuing thread, ordering points, faults, captures.

#include "cuda_stream.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/launch_path.hpp>

#include "cuda_common/capture_mode.hpp"
#include "cuda_check.hpp"
#include "cuda_graph.hpp"
#include "runtime/capture_window.hpp"

namespace launchwatch::detail::cuda {

namespace {

constexpr std::string_view graph_replay_name = "(CUDA graph replay)";

/// Reads one timed launch's window when asked; lets its record go when read or dropped.
///
/// Small enough (four pointers) to sit inside a profile_duration without an allocation.
class record_resolver {
 public:
  record_resolver(std::shared_ptr<device_timing> timing, timing_record* record,
                  std::string_view kernel, bool at_once) noexcept
      : timing_{std::move(timing)}, record_{record}, kernel_{kernel}, at_once_{at_once} {}
  record_resolver(record_resolver&& other) noexcept
      : timing_{std::move(other.timing_)},
        record_{std::exchange(other.record_, nullptr)},
        kernel_{other.kernel_},
        at_once_{other.at_once_} {}
  record_resolver& operator=(record_resolver&&) = delete;
  record_resolver(const record_resolver&) = delete;
  record_resolver& operator=(const record_resolver&) = delete;

  /// Dropped unread: the record goes back once the collector is done with it too.
  ~record_resolver() {
    if (record_ != nullptr) timing_->collector.let_go(record_);
  }

  std::optional<profile_ticks> operator()() {
    struct let_go {
      device_timing& timing;
      timing_record* record;
      ~let_go() { timing.collector.let_go(record); }
    } on_exit{*timing_, std::exchange(record_, nullptr)};
    return timing_->read(*on_exit.record, kernel_, at_once_);
  }

 private:
  std::shared_ptr<device_timing> timing_;
  timing_record* record_;
  std::string_view kernel_;
  bool at_once_;
};

static_assert(sizeof(record_resolver) <= detail::profile_resolver::inline_size,
              "a deferred CUDA measurement must not allocate per launch");

}  // namespace


cuda_stream::cuda_stream(std::shared_ptr<cuda_device> owner) : owner_{std::move(owner)} {
  device_guard on{owner_->index()};
  owner_->health()->check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                          "cudaStreamCreateWithFlags");
}

cuda_stream::~cuda_stream() {
  device_guard on{owner_->index()};
  // Its beacon goes before the stream does, so the batch is read back once its launches finish.
  if (open_batch_) owner_->timing()->collector.close(open_batch_);
  if (capturing_.load(std::memory_order_acquire)) {
    // Abandoned mid-capture (its thread ended): end the window so the stream can be destroyed.
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph != nullptr) {
      (void)cudaGraphDestroy(graph);
    }
    (void)cudaGetLastError();
  }
  if (before_capture_ != nullptr) (void)cudaEventDestroy(before_capture_);
  // Work still queued completes; CUDA releases the stream after it.
  (void)cudaStreamDestroy(stream_);
}

void cuda_stream::validate(const launch_descriptor& launch) {
  owner_->health()->throw_if_failed();
  owner_->check_attributes(launch);
}

void cuda_stream::prepare(const launch_descriptor& launch) { owner_->check_attributes(launch); }

void cuda_stream::launch(const launch_descriptor& launch, const cuda_timing_target& timing) {
  // CUDA launches on the calling thread's current device, and refuses a stream of another one. On
  // a one-GPU machine that is this device on every thread, so the guard asks CUDA nothing.
  device_guard on{owner_->index(), owner_->only_device()};
  const dim3 grid{launch.geometry.count.x, launch.geometry.count.y, launch.geometry.count.z};
  const dim3 block{launch.geometry.dim.x, launch.geometry.dim.y, launch.geometry.dim.z};
  // cuda_entry<K>(K kernel, cuda_timing_target timing): CUDA copies each argument from these.
  cuda_timing_target target = timing;
  void* arguments[] = {const_cast<void*>(launch.kernel), &target};
  const cudaError_t status = [&] {
    launch_path::reported_here own;  // reported by the launch path already: the bridge skips it
    return cudaLaunchKernel(launch.cuda_entry, grid, block, arguments, 0, stream_);
  }();
  if (status != cudaSuccess) [[unlikely]] {
    owner_->health()->fail(status, "cudaLaunchKernel", launch.name);
  }
}

std::uint64_t cuda_stream::note_submitted(std::string_view kernel) {
  if (capturing_.load(std::memory_order_relaxed)) {
    ++captured_launches_;
    return 0;
  }
  const std::uint64_t point = submitted_.load(std::memory_order_relaxed) + 1;
  recent_[point % recent_capacity] = kernel;
  submitted_.store(point, std::memory_order_release);
  return point;
}

std::uint64_t cuda_stream::submit(const launch_descriptor& launch) {
  // Held even on a thread's own stream, which is not the issuing thread's alone: a graph captured
  // on it may be replayed from any thread (replay() numbers its point here too), a read on another
  // thread reads recent_ to name a failed kernel, and a pinned client's threads capture and launch
  // on one stream. The lock keeps a launch, its point and its name one step against all of them.
  std::lock_guard lock{mutex_};
  this->launch(launch, cuda_timing_target{});
  return note_submitted(launch.name);
}

profiled_submission cuda_stream::submit_profiled(const launch_descriptor& launch,
                                                 launch_path::read_when when) {
  // Checked first without the lock so a launch inside a capture window never creates the device's
  // timing state (an allocation a capturing thread must not make), and again under it below.
  if (capturing()) {
    return profiled_submission{submit(launch), std::nullopt, launch_path::capture_refusal};
  }
  const bool at_once = when == launch_path::read_when::at_once;
  const std::shared_ptr<device_timing>& timing = owner_->timing();
  timing->note_timed_launch();
  std::lock_guard lock{mutex_};
  if (capturing_.load(std::memory_order_relaxed)) {
    // Another thread opened a capture on this (pinned) stream since the check above: a timed launch
    // recorded now would replay into a slot that was long given back, and its measurement would
    // never arrive. Recorded untimed instead, and the profile refused.
    this->launch(launch, cuda_timing_target{});
    return profiled_submission{note_submitted(launch.name), std::nullopt,
                               launch_path::capture_refusal};
  }
  const auto taken = timing->collector.acquire(open_batch_, stream_, std::chrono::steady_clock::now());
  if (!taken) {
    // Every block of timing slots holds launches that have not finished (or the device's memory
    // ran out): this launch goes on untimed rather than waiting or failing.
    this->launch(launch, cuda_timing_target{});
    return profiled_submission{
        note_submitted(launch.name), std::nullopt,
        "every deferred-timing slot of the device holds a launch that has not finished (the host "
        "is thousands of timed launches ahead of the GPU)"};
  }
  // Held from here, so the record is let go whatever happens: a launch that fails is read as no
  // window.
  profile_duration measurement{record_resolver{timing, taken->record, launch.name, at_once},
                               timing_method::device};
  this->launch(launch, taken->target);
  if (at_once) timing->collector.stage(*taken->record, stream_);
  // A batch this launch filled is closed after it, so its beacon follows every launch it holds.
  if (taken->filled) timing->collector.close(taken->filled);
  const std::uint64_t point = note_submitted(launch.name);
  return profiled_submission{point, std::move(measurement), {}};
}

bool cuda_stream::record(const launch_descriptor& launch) {
  std::lock_guard lock{mutex_};
  if (!capturing_.load(std::memory_order_relaxed)) return false;
  this->launch(launch, cuda_timing_target{});
  (void)note_submitted(launch.name);
  return true;
}

std::string cuda_stream::pending_kernels(std::uint64_t after, std::uint64_t upto) const {
  std::string names;
  const std::uint64_t first = std::max(after + 1, upto > recent_capacity ? upto - recent_capacity + 1 : 1);
  for (std::uint64_t p = first; p <= upto; ++p) {
    if (!names.empty()) names += ", ";
    names += fmt::format("'{}'", recent_[p % recent_capacity]);
  }
  if (first > after + 1) names = fmt::format("{} earlier, then {}", first - after - 1, names);
  return names;
}

void cuda_stream::wait(std::uint64_t point) {
  if (passed(point)) return;
  const std::uint64_t target = submitted_.load(std::memory_order_acquire);
  device_guard on{owner_->index()};
  relaxed_capture_mode relaxed;
  // CUDA marks no finer point than the stream's end without an event per launch, which would sit
  // between kernels: a wait covers everything this stream was given so far.
  const cudaError_t status = cudaStreamSynchronize(stream_);
  if (status == cudaSuccess) {
    std::uint64_t seen = completed_.load(std::memory_order_relaxed);
    while (seen < target &&
           !completed_.compare_exchange_weak(seen, target, std::memory_order_release)) {
    }
    return;
  }
  const std::string cause = owner_->health()->note(status, "cudaStreamSynchronize");
  (void)cudaGetLastError();
  std::lock_guard lock{mutex_};
  if (failure_) return;  // the first failure not yet taken is kept
  const std::uint64_t done = completed_.load(std::memory_order_relaxed);
  const std::uint64_t first = done + 1;
  // Kept at the earliest launch the fault can have come from: a read that waited for an earlier
  // point did not wait for the culprit.
  if (first == target) {
    // One launch was not known to have finished: that one faulted.
    const std::string_view culprit = recent_[first % recent_capacity];
    failure_.keep(std::make_exception_ptr(kernel_failure{
                      culprit, fmt::format("launchwatch: kernel '{}' failed on CUDA device {}: {}",
                                           culprit, owner_->index(), cause)}),
                  first);
    return;
  }
  // CUDA reports a fault per context, not per kernel: with several launches not known to have
  // finished, naming one of them would accuse a kernel that may have run fine.
  failure_.keep(
      std::make_exception_ptr(kernel_failure{
          std::string_view{},
          fmt::format("launchwatch: a kernel failed on CUDA device {}, and CUDA does not say "
                      "which: one of the launches on this stream not known to have finished ({}). "
                      "{} Run it under compute-sanitizer, or synchronise after each launch, to "
                      "find the culprit",
                      owner_->index(), pending_kernels(done, target), cause)}),
      first);
}

std::uint64_t cuda_stream::last_point() const noexcept {
  return submitted_.load(std::memory_order_acquire);
}

std::exception_ptr cuda_stream::take_failure() noexcept {
  std::lock_guard lock{mutex_};
  return failure_.take();
}

std::exception_ptr cuda_stream::failure_through(std::uint64_t point) const noexcept {
  std::lock_guard lock{mutex_};
  return failure_.through(point);
}

void cuda_stream::order_before(cudaStream_t waiter) {
  std::lock_guard lock{mutex_};
  if (capturing_.load(std::memory_order_relaxed)) {
    // Work recorded in the window is not running; what was submitted before it is marked.
    (void)cudaStreamWaitEvent(waiter, before_capture_, 0);
    return;
  }
  cudaEvent_t mark = nullptr;
  if (cudaEventCreateWithFlags(&mark, cudaEventDisableTiming) != cudaSuccess) return;
  if (cudaEventRecord(mark, stream_) == cudaSuccess) (void)cudaStreamWaitEvent(waiter, mark, 0);
  (void)cudaEventDestroy(mark);  // released once the wait is done
}

void cuda_stream::begin_capture() {
  std::lock_guard lock{mutex_};
  if (capturing_.load(std::memory_order_relaxed)) {
    throw capture_error{nested_capture_refusal};
  }
  device_guard on{owner_->index()};
  auto& health = *owner_->health();
  health.throw_if_failed();
  if (before_capture_ == nullptr) {
    health.check(cudaEventCreateWithFlags(&before_capture_, cudaEventDisableTiming),
                 "cudaEventCreateWithFlags");
  }
  health.check(cudaEventRecord(before_capture_, stream_), "cudaEventRecord");
  // The open timing batch's beacon must land before the window: recorded inside it, it would not
  // fire until a replay.
  if (open_batch_) {
    owner_->timing()->collector.close(open_batch_);
    open_batch_.reset();
  }
  // Thread-local: only this thread's calls are held to the capture's rules, so other threads keep
  // allocating, synchronising and launching on their own streams while the window is open.
  health.check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture");
  captured_launches_ = 0;
  capturing_.store(true, std::memory_order_release);
}

std::unique_ptr<recorded_graph> cuda_stream::end_capture() {
  std::lock_guard lock{mutex_};
  if (!capturing_.load(std::memory_order_relaxed)) {
    throw capture_error{
        "launchwatch: no capture is open on this stream: begin_capture() first (or use capture(fn))"};
  }
  device_guard on{owner_->index()};
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream_, &graph);
  if (status == cudaErrorStreamCaptureWrongThread) {
    (void)cudaGetLastError();
    throw capture_error{
        "launchwatch: a CUDA capture must end on the thread that began it; call end_capture() on "
        "that thread"};
  }
  capturing_.store(false, std::memory_order_release);
  if (status == cudaErrorStreamCaptureInvalidated) {
    (void)cudaGetLastError();
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    throw capture_error{
        "launchwatch: the CUDA capture was invalidated by an operation CUDA cannot record on a "
        "capturing stream; nothing was recorded. Keep only launches inside the capture window"};
  }
  owner_->health()->check(status, "cudaStreamEndCapture");
  cudaGraphExec_t executable = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&executable, graph, 0);
  if (instantiated != cudaSuccess) {
    (void)cudaGraphDestroy(graph);
    owner_->health()->fail(instantiated, "cudaGraphInstantiate");
  }
  return std::make_unique<cuda_graph>(owner_, graph, executable, captured_launches_);
}

std::uint64_t cuda_stream::replay(cudaGraphExec_t graph, std::string_view /*what*/) {
  std::lock_guard lock{mutex_};
  device_guard on{owner_->index()};
  owner_->health()->throw_if_failed();
  launch_path::reported_here own;  // the bridge neither reports nor times our own replays
  owner_->health()->check(cudaGraphLaunch(graph, stream_), "cudaGraphLaunch");
  return note_submitted(graph_replay_name);
}

}  // namespace launchwatch::detail::cuda
