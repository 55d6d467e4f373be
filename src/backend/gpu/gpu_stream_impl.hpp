// gpu_stream's members. Included only by the file that instantiates gpu_stream for a runtime.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/launch_path.hpp>

#include "device_guard.hpp"
#include "gpu_graph.hpp"
#include "gpu_stream.hpp"
#include "runtime/capture_window.hpp"

namespace launchwatch::detail::gpu {

/// Reads one timed launch's window when asked; lets its record go when read or dropped.
///
/// Small enough (four pointers) to sit inside a profile_duration without an allocation.
template <class R>
class record_resolver {
 public:
  record_resolver(std::shared_ptr<device_timing<R>> timing, timing_record<R>* record,
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
      device_timing<R>& timing;
      timing_record<R>* record;
      ~let_go() { timing.collector.let_go(record); }
    } on_exit{*timing_, std::exchange(record_, nullptr)};
    return timing_->read(*on_exit.record, kernel_, at_once_);
  }

 private:
  std::shared_ptr<device_timing<R>> timing_;
  timing_record<R>* record_;
  std::string_view kernel_;
  bool at_once_;
};

template <class R>
gpu_stream<R>::gpu_stream(std::shared_ptr<gpu_device<R>> owner) : owner_{std::move(owner)} {
  device_guard<R> on{owner_->index()};
  owner_->health()->check(R::stream_create(&stream_), "StreamCreateWithFlags");
}

template <class R>
gpu_stream<R>::~gpu_stream() {
  device_guard<R> on{owner_->index()};
  // Its beacon goes before the stream does, so the batch is read back once its launches finish.
  if (open_batch_) owner_->timing()->collector.close(open_batch_);
  if (capturing_.load(std::memory_order_acquire)) {
    // Abandoned mid-capture (its thread ended): end the window so the stream can be destroyed.
    typename R::graph_handle graph = nullptr;
    if (R::stream_end_capture(stream_, &graph) == R::success && graph != nullptr) {
      (void)R::graph_destroy(graph);
    }
    R::clear_error();
  }
  if (before_capture_ != nullptr) (void)R::event_destroy(before_capture_);
  // Work still queued completes; the runtime releases the stream after it.
  (void)R::stream_destroy(stream_);
}

template <class R>
void gpu_stream<R>::validate(const launch_descriptor& launch) {
  owner_->health()->throw_if_failed();
  owner_->check_attributes(launch);
}

template <class R>
void gpu_stream<R>::prepare(const launch_descriptor& launch) {
  owner_->check_attributes(launch);
}

template <class R>
void gpu_stream<R>::launch(const launch_descriptor& launch, const timing_target& timing) {
  // The API launches on the calling thread's current device, and refuses a stream of another one.
  // On a one-GPU machine that is this device on every thread, so the guard asks the API nothing.
  device_guard<R> on{owner_->index(), owner_->only_device()};
  // <backend>_entry<K>(K kernel, timing_target timing): the API copies each argument from these.
  timing_target target = timing;
  void* arguments[] = {const_cast<void*>(launch.kernel), &target};
  const typename R::error status = [&] {
    launch_path::reported_here own;  // reported by the launch path already: the bridge skips it
    return R::launch_kernel(owner_->function_of(launch), R::entry_of(launch), launch.geometry,
                            arguments, stream_);
  }();
  if (status != R::success) [[unlikely]] {
    owner_->health()->fail(status, "LaunchKernel", launch.name);
  }
}

template <class R>
std::uint64_t gpu_stream<R>::note_submitted(std::string_view kernel) {
  if (capturing_.load(std::memory_order_relaxed)) {
    ++captured_launches_;
    return 0;
  }
  const std::uint64_t point = submitted_.load(std::memory_order_relaxed) + 1;
  recent_[point % recent_capacity] = kernel;
  submitted_.store(point, std::memory_order_release);
  return point;
}

template <class R>
std::uint64_t gpu_stream<R>::submit(const launch_descriptor& launch) {
  // Held even on a thread's own stream, which is not the issuing thread's alone: a graph captured
  // on it may be replayed from any thread (replay() numbers its point here too), a read on another
  // thread reads recent_ to name a failed kernel, and a pinned client's threads capture and launch
  // on one stream. The lock keeps a launch, its point and its name one step against all of them.
  std::lock_guard lock{mutex_};
  this->launch(launch, timing_target{});
  return note_submitted(launch.name);
}

template <class R>
profiled_submission gpu_stream<R>::submit_profiled(const launch_descriptor& launch,
                                                   launch_path::read_when when) {
  static_assert(sizeof(record_resolver<R>) <= detail::profile_resolver::inline_size,
                "a deferred GPU measurement must not allocate per launch");
  // Checked first without the lock so a launch inside a capture window never creates the device's
  // timing state (an allocation a capturing thread must not make), and again under it below.
  if (capturing()) {
    return profiled_submission{submit(launch), std::nullopt, launch_path::capture_refusal};
  }
  const bool at_once = when == launch_path::read_when::at_once;
  const std::shared_ptr<device_timing<R>>& timing = owner_->timing();
  timing->note_timed_launch();
  std::lock_guard lock{mutex_};
  if (capturing_.load(std::memory_order_relaxed)) {
    // Another thread opened a capture on this (pinned) stream since the check above: a timed launch
    // recorded now would replay into a slot that was long given back, and its measurement would
    // never arrive. Recorded untimed instead, and the profile refused.
    this->launch(launch, timing_target{});
    return profiled_submission{note_submitted(launch.name), std::nullopt,
                               launch_path::capture_refusal};
  }
  const auto taken =
      timing->collector.acquire(open_batch_, stream_, std::chrono::steady_clock::now(), reads_);
  if (!taken) {
    // Every block of timing slots holds launches that have not finished (or the device's memory
    // ran out): this launch goes on untimed rather than waiting or failing.
    this->launch(launch, timing_target{});
    return profiled_submission{
        note_submitted(launch.name), std::nullopt,
        "every deferred-timing slot of the device holds a launch that has not finished (the host "
        "is thousands of timed launches ahead of the GPU)"};
  }
  taken->record->sequence = ++timed_launches_;
  // Held from here, so the record is let go whatever happens: a launch that fails is read as no
  // window.
  profile_duration measurement{record_resolver<R>{timing, taken->record, launch.name, at_once},
                               timing_method::device};
  {
    // Said whether the launch is submitted or throws: a read on another thread that found the
    // batch open while this launch held its slot left the batch's close to this moment.
    struct says_launched {
      timing_collector<R>& collector;
      timing_record<R>& record;
      ~says_launched() { collector.launched(record); }
    } after{timing->collector, *taken->record};
    this->launch(launch, taken->target);
  }
  if (at_once) timing->collector.stage(*taken->record, stream_);
  // A batch this launch filled is closed after it, so its beacon follows every launch it holds.
  if (taken->filled) timing->collector.close(taken->filled);
  const std::uint64_t point = note_submitted(launch.name);
  return profiled_submission{point, std::move(measurement), {}};
}

template <class R>
bool gpu_stream<R>::record(const launch_descriptor& launch) {
  std::lock_guard lock{mutex_};
  if (!capturing_.load(std::memory_order_relaxed)) return false;
  this->launch(launch, timing_target{});
  (void)note_submitted(launch.name);
  return true;
}

template <class R>
std::string gpu_stream<R>::pending_kernels(std::uint64_t after, std::uint64_t upto) const {
  std::string names;
  const std::uint64_t first =
      std::max(after + 1, upto > recent_capacity ? upto - recent_capacity + 1 : 1);
  for (std::uint64_t p = first; p <= upto; ++p) {
    if (!names.empty()) names += ", ";
    names += fmt::format("'{}'", recent_[p % recent_capacity]);
  }
  if (first > after + 1) names = fmt::format("{} earlier, then {}", first - after - 1, names);
  return names;
}

template <class R>
void gpu_stream<R>::wait(std::uint64_t point) {
  if (passed(point)) return;
  const std::uint64_t target = submitted_.load(std::memory_order_acquire);
  device_guard<R> on{owner_->index()};
  typename R::relaxed_capture_mode relaxed;
  // The API marks no finer point than the stream's end without an event per launch, which would
  // sit between kernels: a wait covers everything this stream was given so far.
  const typename R::error status = R::stream_synchronize(stream_);
  if (status == R::success) {
    std::uint64_t seen = completed_.load(std::memory_order_relaxed);
    while (seen < target &&
           !completed_.compare_exchange_weak(seen, target, std::memory_order_release)) {
    }
    return;
  }
  const std::string cause = owner_->health()->note(status, "StreamSynchronize");
  R::clear_error();
  std::lock_guard lock{mutex_};
  if (failure_) return;  // the first failure not yet taken is kept
  keep_failure(cause, completed_.load(std::memory_order_relaxed), target);
}

template <class R>
void gpu_stream<R>::keep_failure(const std::string& cause, std::uint64_t done,
                                 std::uint64_t target) {
  const std::uint64_t first = done + 1;
  // Kept at the earliest launch the fault can have come from: a read that waited for an earlier
  // point did not wait for the culprit.
  if (first == target) {
    // One launch was not known to have finished: that one faulted.
    const std::string_view culprit = recent_[first % recent_capacity];
    failure_.keep(std::make_exception_ptr(kernel_failure{
                      culprit, fmt::format("launchwatch: kernel '{}' failed on {} device {}: {}",
                                           culprit, R::wording.api, owner_->index(), cause)}),
                  first);
    return;
  }
  // The API reports a fault per context, not per kernel: with several launches not known to have
  // finished, naming one of them would accuse a kernel that may have run fine.
  failure_.keep(
      std::make_exception_ptr(kernel_failure{
          std::string_view{},
          fmt::format("launchwatch: a kernel failed on {0} device {1}, and {0} does not say "
                      "which: one of the launches on this stream not known to have finished ({2}). "
                      "{3} Run it under {4}, or synchronise after each launch, to find the culprit",
                      R::wording.api, owner_->index(), pending_kernels(done, target), cause,
                      R::wording.sanitizer)}),
      first);
}

template <class R>
std::uint64_t gpu_stream<R>::last_point() const noexcept {
  return submitted_.load(std::memory_order_acquire);
}

template <class R>
std::exception_ptr gpu_stream<R>::take_failure() noexcept {
  std::lock_guard lock{mutex_};
  return failure_.take();
}

template <class R>
std::exception_ptr gpu_stream<R>::failure_through(std::uint64_t point) const noexcept {
  std::lock_guard lock{mutex_};
  return failure_.through(point);
}

template <class R>
void gpu_stream<R>::order_before(typename R::stream_handle waiter) {
  std::lock_guard lock{mutex_};
  if (capturing_.load(std::memory_order_relaxed)) {
    // Work recorded in the window is not running; what was submitted before it is marked.
    (void)R::stream_wait_event(waiter, before_capture_);
    return;
  }
  typename R::event_handle mark = nullptr;
  if (R::event_create(&mark) != R::success) return;
  if (R::event_record(mark, stream_) == R::success) (void)R::stream_wait_event(waiter, mark);
  (void)R::event_destroy(mark);  // released once the wait is done
}

template <class R>
void gpu_stream<R>::begin_capture() {
  std::lock_guard lock{mutex_};
  if (capturing_.load(std::memory_order_relaxed)) {
    throw capture_error{nested_capture_refusal};
  }
  device_guard<R> on{owner_->index()};
  auto& health = *owner_->health();
  health.throw_if_failed();
  if (before_capture_ == nullptr) {
    health.check(R::event_create(&before_capture_), "EventCreateWithFlags");
  }
  health.check(R::event_record(before_capture_, stream_), "EventRecord");
  // The open timing batch's beacon must land before the window: recorded inside it, it would not
  // fire until a replay.
  if (open_batch_) {
    owner_->timing()->collector.close(open_batch_);
    open_batch_.reset();
  }
  // Thread-local: only this thread's calls are held to the capture's rules, so other threads keep
  // allocating, synchronising and launching on their own streams while the window is open.
  health.check(R::stream_begin_capture(stream_), "StreamBeginCapture");
  captured_launches_ = 0;
  capturing_.store(true, std::memory_order_release);
}

template <class R>
std::unique_ptr<recorded_graph> gpu_stream<R>::end_capture() {
  std::lock_guard lock{mutex_};
  if (!capturing_.load(std::memory_order_relaxed)) {
    throw capture_error{
        "launchwatch: no capture is open on this stream: begin_capture() first (or use "
        "capture(fn))"};
  }
  device_guard<R> on{owner_->index()};
  typename R::graph_handle graph = nullptr;
  const typename R::error status = R::stream_end_capture(stream_, &graph);
  if (status == R::capture_wrong_thread) {
    R::clear_error();
    throw capture_error{fmt::format(
        "launchwatch: a {} capture must end on the thread that began it; call end_capture() on "
        "that thread",
        R::wording.api)};
  }
  capturing_.store(false, std::memory_order_release);
  if (status == R::capture_invalidated) {
    R::clear_error();
    if (graph != nullptr) (void)R::graph_destroy(graph);
    throw capture_error{fmt::format(
        "launchwatch: the {0} capture was invalidated by an operation {0} cannot record on a "
        "capturing stream; nothing was recorded. Keep only launches inside the capture window",
        R::wording.api)};
  }
  owner_->health()->check(status, "StreamEndCapture");
  typename R::graph_exec_handle executable = nullptr;
  const typename R::error instantiated = R::graph_instantiate(&executable, graph);
  if (instantiated != R::success) {
    (void)R::graph_destroy(graph);
    owner_->health()->fail(instantiated, "GraphInstantiate");
  }
  return std::make_unique<gpu_graph<R>>(owner_, graph, executable, captured_launches_);
}

template <class R>
std::uint64_t gpu_stream<R>::replay(typename R::graph_exec_handle graph) {
  std::lock_guard lock{mutex_};
  device_guard<R> on{owner_->index()};
  owner_->health()->throw_if_failed();
  launch_path::reported_here own;  // the bridge neither reports nor times our own replays
  owner_->health()->check(R::graph_launch(graph, stream_), "GraphLaunch");
  return note_submitted(R::wording.graph_replay);
}

}  // namespace launchwatch::detail::gpu
