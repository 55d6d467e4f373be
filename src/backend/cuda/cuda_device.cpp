#include "cuda_device.hpp"

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

#include "cuda_check.hpp"

namespace launchwatch::detail::cuda {
namespace {

/// Lets the calling thread make calls a capture window would otherwise forbid it (allocations,
/// synchronising another stream) while it lives. The backend's memory and timing work never goes
/// to a capturing stream, so none of it belongs in a graph, and in CUDA's default mode such a call
/// from the capturing thread would invalidate the capture instead.
class [[nodiscard]] relaxed_capture_mode {
 public:
  relaxed_capture_mode() noexcept { (void)cudaThreadExchangeStreamCaptureMode(&previous_); }
  ~relaxed_capture_mode() { (void)cudaThreadExchangeStreamCaptureMode(&previous_); }
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
};

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

constexpr std::string_view graph_replay_name = "(CUDA graph replay)";

/// Reads one timed launch's window when asked; gives its slot back when read or dropped.
///
/// Small enough (six pointers) to sit inside a profile_duration without an allocation.
class slot_resolver {
 public:
  slot_resolver(std::shared_ptr<device_timing> timing, timing_slot_pool::lease taken,
                std::string_view kernel) noexcept
      : timing_{std::move(timing)}, taken_{taken}, kernel_{kernel} {}
  slot_resolver(slot_resolver&& other) noexcept
      : timing_{std::move(other.timing_)}, taken_{other.taken_}, kernel_{other.kernel_} {}
  slot_resolver& operator=(slot_resolver&&) = delete;
  slot_resolver(const slot_resolver&) = delete;
  slot_resolver& operator=(const slot_resolver&) = delete;

  /// Dropped unread: the slot goes back once the launch has written it.
  ~slot_resolver() {
    if (timing_) timing_->slots.release(taken_);
  }

  std::optional<profile_ticks> operator()() {
    const std::shared_ptr<device_timing> timing = std::move(timing_);
    struct give_back {
      device_timing& t;
      timing_slot_pool::lease taken;
      ~give_back() { t.slots.release(taken); }
    } on_exit{*timing, taken_};
    const device_window window = timing->wait(taken_, kernel_);
    return timing->clock.to_ticks(window.start, window.end);
  }

 private:
  std::shared_ptr<device_timing> timing_;
  timing_slot_pool::lease taken_;
  std::string_view kernel_;
};

static_assert(sizeof(slot_resolver) <= detail::profile_resolver::inline_size,
              "a deferred CUDA measurement must not allocate per launch");

}  // namespace

// ---- device_health --------------------------------------------------------------------------

std::string device_health::note(cudaError_t status, std::string_view call, std::string_view kernel) {
  std::string message = describe_failure(status, call, kernel, device_);
  if (is_sticky(status)) {
    std::lock_guard lock{mutex_};
    if (!failed_.load(std::memory_order_relaxed)) {
      first_fault_ = message;
      failed_.store(true, std::memory_order_release);
    }
  }
  return message;
}

void device_health::fail(cudaError_t status, std::string_view call, std::string_view kernel) {
  if (is_sticky(status)) {
    (void)note(status, call, kernel);
    (void)cudaGetLastError();
    std::lock_guard lock{mutex_};
    throw device_error{fmt::format(
        "launchwatch: CUDA call {}{} on device {} failed because the device is unusable after a "
        "sticky fault: {}",
        call, kernel.empty() ? std::string{} : fmt::format(" for kernel '{}'", kernel), device_,
        first_fault_)};
  }
  throw_failure(status, call, kernel, device_);
}

void device_health::throw_failed() const {
  std::lock_guard lock{mutex_};
  throw device_error{fmt::format(
      "launchwatch: CUDA device {} is unusable for the rest of this process after a sticky fault: {}",
      device_, first_fault_)};
}

// ---- device_timing --------------------------------------------------------------------------

namespace {

// Every device_timing alive, so the keepers can be stopped at exit while CUDA still works.
struct keeper_registry {
  std::mutex mutex;
  std::vector<device_timing*> timings;
  static keeper_registry& get() {
    static auto* const instance = new keeper_registry;  // never destroyed: used at exit
    return *instance;
  }
};

}  // namespace

device_timing::device_timing(int index, std::shared_ptr<device_health> device_health)
    : device{index}, health{std::move(device_health)}, slots{index}, clock{index} {
  device_guard on{device};
  health->check(cudaStreamCreateWithFlags(&watch_, cudaStreamNonBlocking),
                "cudaStreamCreateWithFlags");
  {
    relaxed_capture_mode relaxed;
    clock.ensure_anchored();
  }
  keeper_ = std::thread{[this] { keep(); }};
  auto& registry = keeper_registry::get();
  std::lock_guard lock{registry.mutex};
  // Registered after CUDA started, so this runs before CUDA's own teardown at exit.
  static const bool registered = (std::atexit(&device_timing::stop_all_keepers), true);
  (void)registered;
  registry.timings.push_back(this);
}

device_timing::~device_timing() {
  {
    auto& registry = keeper_registry::get();
    std::lock_guard lock{registry.mutex};
    std::erase(registry.timings, this);
  }
  stop();
  if (watch_ != nullptr) (void)cudaStreamDestroy(watch_);
}

void device_timing::stop_all_keepers() noexcept {
  auto& registry = keeper_registry::get();
  std::lock_guard lock{registry.mutex};
  for (device_timing* t : registry.timings) t->stop();
}

void device_timing::stop() noexcept {
  {
    std::lock_guard lock{keeper_mutex_};
    stopping_ = true;
  }
  keeper_wake_.notify_all();
  if (keeper_.joinable()) keeper_.join();
}

void device_timing::mark_active() noexcept {
  if (active_.exchange(true)) return;
  // Timing resumed after a quiet spell: anchor now rather than at the next tick, so the first
  // launches of a pass are not mapped by extrapolating across the pause.
  if (idle_.load()) {
    {
      std::lock_guard lock{keeper_mutex_};
      woken_ = true;
    }
    keeper_wake_.notify_one();
  }
}

void device_timing::keep() {
  std::unique_lock lock{keeper_mutex_};
  while (!stopping_) {
    keeper_wake_.wait_for(lock, device_clock::reanchor_interval,
                          [&] { return stopping_ || woken_; });
    if (stopping_) break;
    const bool woken = std::exchange(woken_, false);
    const bool was_active = active_.exchange(false);
    idle_.store(!was_active && !woken);
    if (!was_active && !woken) continue;
    lock.unlock();
    try {
      // Waits briefly: when the device is saturated, the probe tries again next tick.
      if (!health->failed()) (void)clock.anchor(std::chrono::milliseconds{20});
    } catch (...) {
      // A failed device reports itself to whoever waits on it; the keeper just stops anchoring.
    }
    lock.lock();
  }
}

device_window device_timing::wait(const timing_slot_pool::lease& taken, std::string_view kernel) {
  const auto began = std::chrono::steady_clock::now();
  for (std::uint32_t round = 0;; ++round) {
    if (const std::optional<device_window> window = slots.poll(taken)) return *window;
    // Short kernels: spin on the record, which costs no CUDA call.
    if (round < 2048) {
      cpu_relax();
      continue;
    }
    // Longer ones: check now and then that the device has not failed, since a faulted kernel never
    // writes its record and waiting for it would never end.
    health->throw_if_failed();
    if (round % 64 == 0) {
      device_guard on{device};
      relaxed_capture_mode relaxed;
      const cudaError_t status = cudaStreamQuery(watch_);
      if (status != cudaSuccess && status != cudaErrorNotReady) {
        if (const std::optional<device_window> window = slots.poll(taken)) return *window;
        health->fail(status, "cudaStreamQuery (waiting for a timed kernel to finish)", kernel);
      }
    }
    if (std::chrono::steady_clock::now() - began < std::chrono::milliseconds{1}) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds{50});
    }
  }
}

// ---- cuda_device ----------------------------------------------------------------------------

cuda_device::cuda_device(int index)
    : index_{index}, health_{std::make_shared<device_health>(index)} {
  device_guard on{index_};
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, index_), "cudaGetDeviceProperties", index_);
  name_ = properties.name;
  limits_.max_units_per_cube = static_cast<std::uint64_t>(properties.maxThreadsPerBlock);
  limits_.max_cube_dim = ::launchwatch::cube_dim{static_cast<std::uint32_t>(properties.maxThreadsDim[0]),
                                                 static_cast<std::uint32_t>(properties.maxThreadsDim[1]),
                                                 static_cast<std::uint32_t>(properties.maxThreadsDim[2])};
  limits_.max_cube_count = ::launchwatch::cube_count{static_cast<std::uint32_t>(properties.maxGridSize[0]),
                                                     static_cast<std::uint32_t>(properties.maxGridSize[1]),
                                                     static_cast<std::uint32_t>(properties.maxGridSize[2])};
  shared_memory_per_block_ = properties.sharedMemPerBlock;
  shared_memory_per_block_optin_ = properties.sharedMemPerBlockOptin;
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount", index_);
  only_device_ = count == 1;

  check(cudaStreamCreateWithFlags(&service_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
        index_);
  check(cudaStreamCreateWithFlags(&release_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
        index_);
  // A pool of our own, so its settings don't change the program's: freed memory stays in it rather
  // than going back to the driver at each synchronisation, and an allocation never waits behind a
  // free that is itself waiting for some stream's kernels.
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = index_;
  check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate", index_);
  std::uint64_t keep_everything = std::numeric_limits<std::uint64_t>::max();
  check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything),
        "cudaMemPoolSetAttribute", index_);
  int no = 0;
  check(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &no),
        "cudaMemPoolSetAttribute", index_);
}

cuda_device::~cuda_device() {
  (void)cudaStreamSynchronize(release_);
  (void)cudaStreamSynchronize(service_);
  (void)cudaStreamDestroy(release_);
  (void)cudaStreamDestroy(service_);
  (void)cudaMemPoolDestroy(pool_);
}

void cuda_device::finish_service_work(std::string_view call) {
  health_->check(cudaStreamSynchronize(service_), call);
}

void* cuda_device::allocate(std::size_t bytes, stream& /*on*/) {
  health_->throw_if_failed();
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  void* memory = nullptr;
  health_->check(cudaMallocFromPoolAsync(&memory, bytes, pool_, service_),
                 "cudaMallocFromPoolAsync");
  // Synchronised so the memory may be used on any stream at once; the service stream holds only
  // memory work, so this waits for no kernel.
  finish_service_work("cudaStreamSynchronize (after an allocation)");
  return memory;
}

void cuda_device::deallocate(void* memory, std::size_t /*bytes*/,
                             std::span<const stream_point> after) noexcept {
  if (memory == nullptr) return;
  try {
    device_guard on{index_};
    relaxed_capture_mode relaxed;
    std::lock_guard lock{release_mutex_};
    // The free waits on the device, not here, for every launch that used the memory.
    for (const stream_point& use : after) {
      auto* s = static_cast<cuda_stream*>(use.on);
      if (s != nullptr && !s->passed(use.point)) s->order_before(release_);
    }
    (void)cudaFreeAsync(memory, release_);
  } catch (...) {
    // A device that failed cannot free anything; the memory goes with the process.
  }
}

void cuda_device::zero(void* memory, std::size_t bytes, stream& /*on*/) {
  health_->throw_if_failed();
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  health_->check(cudaMemsetAsync(memory, 0, bytes, service_), "cudaMemsetAsync");
  finish_service_work("cudaStreamSynchronize (after zeroing a buffer)");
}

void cuda_device::copy_to_device(void* destination, const void* source, std::size_t bytes,
                                 stream& /*on*/) {
  health_->throw_if_failed();
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  health_->check(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyHostToDevice, service_),
                 "cudaMemcpyAsync (host to device)");
  finish_service_work("cudaStreamSynchronize (after a copy to the device)");
}

void cuda_device::copy_to_host(void* destination, const void* source, std::size_t bytes,
                               stream& /*on*/) {
  health_->throw_if_failed();
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  health_->check(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToHost, service_),
                 "cudaMemcpyAsync (device to host)");
  finish_service_work("cudaStreamSynchronize (after a copy to the host)");
}

std::shared_ptr<stream> cuda_device::create_stream() {
  health_->throw_if_failed();
  return std::make_shared<cuda_stream>(shared_from_this());
}

const cudaFuncAttributes& cuda_device::attributes_of(const launch_descriptor& launch) {
  // Each thread remembers where the attributes of the kernels it launched lately are, so a launch
  // takes no lock even when a program alternates between kernels (a layer's dozen ops, say), where
  // remembering only the last one would send nearly every launch through the shared lock, whose
  // count every launching thread writes. Direct-mapped by entry address: a collision costs a trip
  // to the map. What is remembered never goes stale: an entry's attributes are set once, in a map
  // whose elements never move or go, of a device that lives as long as the process.
  struct remembered {
    const cuda_device* device = nullptr;
    const void* entry = nullptr;
    const cudaFuncAttributes* attributes = nullptr;
  };
  constexpr unsigned remembered_bits = 6;
  thread_local std::array<remembered, std::size_t{1} << remembered_bits> recent{};
  // Fibonacci hashing: the top bits of the product depend on every bit of the address.
  remembered& slot = recent[static_cast<std::size_t>(
      (reinterpret_cast<std::uintptr_t>(launch.cuda_entry) * std::uint64_t{0x9E3779B97F4A7C15}) >>
      (64 - remembered_bits))];
  if (slot.device == this && slot.entry == launch.cuda_entry) return *slot.attributes;
  {
    std::shared_lock lock{attributes_mutex_};
    if (auto found = attributes_.find(launch.cuda_entry); found != attributes_.end()) {
      slot = {this, launch.cuda_entry, &found->second};
      return found->second;
    }
  }
  device_guard on{index_};
  relaxed_capture_mode relaxed;
  cudaFuncAttributes attributes{};
  // Loads the entry's module (CUDA loads modules lazily), which is what a dry run prepares.
  const cudaError_t status = cudaFuncGetAttributes(&attributes, launch.cuda_entry);
  if (status == cudaErrorInvalidDeviceFunction || status == cudaErrorNoKernelImageForDevice ||
      status == cudaErrorInvalidPtx || status == cudaErrorUnsupportedPtxVersion) {
    (void)cudaGetLastError();
    throw invalid_launch{fmt::format(
        "launchwatch: kernel '{}' has no code CUDA device {} ({}) can run: {} ({}). Either the file "
        "that launches it was compiled for another GPU architecture (set CMAKE_CUDA_ARCHITECTURES "
        "to include this one: 90 for an H100 or H200), or it was linked against a second, static "
        "copy of the CUDA runtime (CMake's default for CUDA targets) that launchwatch's shared one "
        "does not know: set the target's CUDA_RUNTIME_LIBRARY to Shared",
        launch.name, index_, name_, cudaGetErrorName(status), cudaGetErrorString(status))};
  }
  health_->check(status, "cudaFuncGetAttributes", launch.name);
  std::unique_lock lock{attributes_mutex_};
  auto [at, inserted] = attributes_.emplace(launch.cuda_entry, attributes);
  slot = {this, launch.cuda_entry, &at->second};
  return at->second;
}

void cuda_device::check_attributes(const launch_descriptor& launch) {
  if (launch.cuda_entry == nullptr) {
    throw invalid_launch{fmt::format(
        "launchwatch: kernel '{}' cannot run on CUDA device {}: the file that launched it was not "
        "compiled by nvcc, so no CUDA entry was instantiated for it. Compile that file as CUDA (name "
        "it .cu, or set_source_files_properties(FILE PROPERTIES LANGUAGE CUDA)), or launch it "
        "through client::cpu()",
        launch.name, index_)};
  }
  const cudaFuncAttributes& attributes = attributes_of(launch);
  const ::launchwatch::cube_dim dim = launch.geometry.dim;
  const std::uint64_t units = dim.total();
  if (units > static_cast<std::uint64_t>(attributes.maxThreadsPerBlock)) {
    throw invalid_launch{fmt::format(
        "launchwatch: kernel '{}' was launched with {} units per cube ({}x{}x{}), but as compiled "
        "for CUDA device {} it can run at most {} per cube: it uses {} registers per unit. Launch it "
        "with smaller cubes, or make it use fewer registers",
        launch.name, units, dim.x, dim.y, dim.z, index_, attributes.maxThreadsPerBlock,
        attributes.numRegs)};
  }
  if (attributes.sharedSizeBytes > shared_memory_per_block_) {
    throw invalid_launch{fmt::format(
        "launchwatch: kernel '{}' declares {} bytes of shared memory per cube, over the {} bytes CUDA "
        "device {} gives a cube without opting in (up to {} with opt-in, which launchwatch does not "
        "do): use less shared memory",
        launch.name, attributes.sharedSizeBytes, shared_memory_per_block_, index_,
        shared_memory_per_block_optin_)};
  }
}

const std::shared_ptr<device_timing>& cuda_device::timing() {
  std::call_once(timing_once_,
                 [&] { timing_ = std::make_shared<device_timing>(index_, health_); });
  return timing_;
}

// ---- cuda_stream ----------------------------------------------------------------------------

cuda_stream::cuda_stream(std::shared_ptr<cuda_device> owner) : owner_{std::move(owner)} {
  device_guard on{owner_->index()};
  owner_->health()->check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                          "cudaStreamCreateWithFlags");
}

cuda_stream::~cuda_stream() {
  device_guard on{owner_->index()};
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
  const cudaError_t status = cudaLaunchKernel(launch.cuda_entry, grid, block, arguments, 0, stream_);
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

profiled_submission cuda_stream::submit_profiled(const launch_descriptor& launch) {
  constexpr std::string_view capturing_refusal =
      "the stream is recording a CUDA graph: its launches run at each replay, not now";
  // Checked first without the lock so a launch inside a capture window never creates the device's
  // timing state (an allocation a capturing thread must not make), and again under it below.
  if (capturing()) return profiled_submission{submit(launch), std::nullopt, capturing_refusal};
  const std::shared_ptr<device_timing>& timing = owner_->timing();
  timing->note_timed_launch();
  std::lock_guard lock{mutex_};
  if (capturing_.load(std::memory_order_relaxed)) {
    // Another thread opened a capture on this (pinned) stream since the check above: a timed launch
    // recorded now would replay into a slot that was long given back, and its measurement would
    // never arrive. Recorded untimed instead, and the profile refused.
    this->launch(launch, cuda_timing_target{});
    return profiled_submission{note_submitted(launch.name), std::nullopt, capturing_refusal};
  }
  const timing_slot_pool::lease taken = timing->slots.acquire();
  try {
    this->launch(launch, timing->slots.target(taken));
  } catch (...) {
    timing->slots.release(taken, false);
    throw;
  }
  const std::uint64_t point = note_submitted(launch.name);
  return profiled_submission{
      point, profile_duration{slot_resolver{timing, taken, launch.name}, timing_method::device}, {}};
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
  // The earliest launch the fault can have come from: a read that waited for an earlier point did
  // not wait for the culprit.
  failure_point_ = first;
  if (first == target) {
    // One launch was not known to have finished: that one faulted.
    const std::string_view culprit = recent_[first % recent_capacity];
    failure_ = std::make_exception_ptr(kernel_failure{
        culprit, fmt::format("launchwatch: kernel '{}' failed on CUDA device {}: {}", culprit,
                             owner_->index(), cause)});
    return;
  }
  // CUDA reports a fault per context, not per kernel: with several launches not known to have
  // finished, naming one of them would accuse a kernel that may have run fine.
  failure_ = std::make_exception_ptr(kernel_failure{
      std::string_view{},
      fmt::format("launchwatch: a kernel failed on CUDA device {}, and CUDA does not say which: one "
                  "of the launches on this stream not known to have finished ({}). {} Run it under "
                  "compute-sanitizer, or synchronise after each launch, to find the culprit",
                  owner_->index(), pending_kernels(done, target), cause)});
}

std::uint64_t cuda_stream::last_point() const noexcept {
  return submitted_.load(std::memory_order_acquire);
}

std::exception_ptr cuda_stream::take_failure() noexcept {
  std::lock_guard lock{mutex_};
  return std::exchange(failure_, nullptr);
}

std::exception_ptr cuda_stream::failure_through(std::uint64_t point) const noexcept {
  std::lock_guard lock{mutex_};
  return failure_ && failure_point_ <= point ? failure_ : nullptr;
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
    throw capture_error{
        "launchwatch: this stream is already recording a capture; end it (end_capture) before "
        "beginning another"};
  }
  device_guard on{owner_->index()};
  auto& health = *owner_->health();
  health.throw_if_failed();
  if (before_capture_ == nullptr) {
    health.check(cudaEventCreateWithFlags(&before_capture_, cudaEventDisableTiming),
                 "cudaEventCreateWithFlags");
  }
  health.check(cudaEventRecord(before_capture_, stream_), "cudaEventRecord");
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
  owner_->health()->check(cudaGraphLaunch(graph, stream_), "cudaGraphLaunch");
  return note_submitted(graph_replay_name);
}

// ---- cuda_graph -----------------------------------------------------------------------------

cuda_graph::cuda_graph(std::shared_ptr<cuda_device> owner, cudaGraph_t graph,
                       cudaGraphExec_t executable, std::size_t launches)
    : owner_{std::move(owner)}, graph_{graph}, executable_{executable}, launches_{launches} {}

cuda_graph::~cuda_graph() {
  device_guard on{owner_->index()};
  (void)cudaGraphExecDestroy(executable_);
  (void)cudaGraphDestroy(graph_);
}

std::uint64_t cuda_graph::replay(stream& on) {
  auto* target = dynamic_cast<cuda_stream*>(&on);
  if (target == nullptr || &target->owner() != owner_.get()) {
    throw invalid_launch{fmt::format(
        "launchwatch: a graph recorded on CUDA device {} can only be replayed on a stream of that "
        "device",
        owner_->index())};
  }
  return target->replay(executable_, "graph");
}

}  // namespace launchwatch::detail::cuda
