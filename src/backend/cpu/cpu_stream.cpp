// One CPU stream: launches queued to its worker thread, ordering points, failures, timing,
// captures.
#include "backend/cpu/cpu_stream.hpp"

#include <cstring>
#include <new>
#include <utility>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>

#include "backend/cpu/cpu_device.hpp"
#include "backend/cpu/cpu_graph.hpp"
#include "backend/cpu/cpu_pool.hpp"
#include "core/interface/fork_generation.hpp"
#include "core/interface/thread_name.hpp"

namespace launchwatch::detail {
namespace {

/// Below this many units a launch runs on its stream's worker alone: handing chunks to the pool
/// costs more than so little work.
constexpr std::uint64_t units_worth_spreading = 4096;

const char* describe(const std::exception_ptr& thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// kernel_copy, cpu_launch

kernel_copy::kernel_copy(const void* bytes, std::size_t size, std::size_t alignment)
    : size_{size}, alignment_{alignment} {
  if (size > inline_size || alignment > alignof(std::max_align_t)) {
    heap_ = ::operator new(size, std::align_val_t{alignment});
    std::memcpy(heap_, bytes, size);
  } else if (size > 0) {
    std::memcpy(inline_, bytes, size);
  }
}

kernel_copy::kernel_copy(kernel_copy&& other) noexcept
    : heap_{std::exchange(other.heap_, nullptr)}, size_{other.size_}, alignment_{other.alignment_} {
  if (heap_ == nullptr && size_ > 0) std::memcpy(inline_, other.inline_, size_);
}

kernel_copy& kernel_copy::operator=(kernel_copy&& other) noexcept {
  if (this != &other) {
    release();
    heap_ = std::exchange(other.heap_, nullptr);
    size_ = other.size_;
    alignment_ = other.alignment_;
    if (heap_ == nullptr && size_ > 0) std::memcpy(inline_, other.inline_, size_);
  }
  return *this;
}

kernel_copy::~kernel_copy() { release(); }

void kernel_copy::release() noexcept {
  if (heap_ != nullptr) ::operator delete(heap_, std::align_val_t{alignment_});
  heap_ = nullptr;
}

cpu_launch cpu_launch::copy_of(const launch_descriptor& launch) {
  return cpu_launch{launch.name, launch.geometry, launch.cpu_entry,
                    kernel_copy{launch.kernel, launch.kernel_size, launch.kernel_alignment}};
}

namespace {

/// Reads one timed CPU launch's record: waits for this launch only, not the stream. Small enough
/// to sit inside a profile_duration without an allocation.
class cpu_resolver {
 public:
  cpu_resolver(std::shared_ptr<cpu_timing_slots> pool, cpu_timing_slots::record* taken) noexcept
      : pool_{std::move(pool)}, taken_{taken} {}
  cpu_resolver(cpu_resolver&& other) noexcept
      : pool_{std::move(other.pool_)}, taken_{std::exchange(other.taken_, nullptr)} {}
  cpu_resolver& operator=(cpu_resolver&&) = delete;
  cpu_resolver(const cpu_resolver&) = delete;
  cpu_resolver& operator=(const cpu_resolver&) = delete;
  ~cpu_resolver() {
    if (taken_ != nullptr && !pool_->inherited_through_fork()) pool_->let_go(taken_);
  }

  std::optional<profile_ticks> operator()() {
    auto* const taken = std::exchange(taken_, nullptr);
    if (pool_->inherited_through_fork()) [[unlikely]] {
      // A forked child reading a launch of the parent's (an attribution's kept measurement): the
      // worker that would finish it is not here, and the pool's lock may have been held at the
      // fork, so the record is read if it was done by then and is otherwise never given back.
      if (!taken->done.load(std::memory_order_acquire)) return std::nullopt;
      return profile_ticks::from_start_end(taken->start, taken->end);
    }
    while (!taken->done.load(std::memory_order_acquire)) {
      taken->done.wait(false, std::memory_order_acquire);
    }
    const auto ticks = profile_ticks::from_start_end(taken->start, taken->end);
    pool_->let_go(taken);
    return ticks;
  }

 private:
  std::shared_ptr<cpu_timing_slots> pool_;
  cpu_timing_slots::record* taken_;
};

static_assert(sizeof(cpu_resolver) <= detail::profile_resolver::inline_size,
              "a deferred CPU measurement must not allocate per launch");

}  // namespace

// -----------------------------------------------------------------------------------------------
// cpu_stream

cpu_stream::cpu_stream(std::shared_ptr<cpu_device> owner)
    : owner_{std::move(owner)}, generation_{fork_generation()} {}

bool cpu_stream::inherited_through_fork() const noexcept {
  return generation_ != fork_generation();
}

cpu_stream::~cpu_stream() {
  if (inherited_through_fork()) [[unlikely]] {
    // A forked child: the worker is the parent's, and its lock may have been held at the fork.
    // Touch neither; the handle is let go without joining a thread this process does not have.
    if (worker_.joinable()) new std::thread{std::move(worker_)};
    return;
  }
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  work_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void cpu_stream::validate(const launch_descriptor& launch) {
  if (launch.cpu_entry == nullptr || (launch.kernel == nullptr && launch.kernel_size > 0)) {
    throw invalid_launch{launch_rejected(
        launch.name, *owner_,
        "the launch carries no CPU entry; launch kernels through client::launch")};
  }
}

void cpu_stream::prepare(const launch_descriptor& launch) {
  // Nothing to load on the CPU: the entry was compiled with the program. Copying the kernel is the
  // part of a submission a dry run still pays, so the measurement of a dry launch is not zero.
  (void)cpu_launch::copy_of(launch);
}

std::uint64_t cpu_stream::submit(const launch_descriptor& launch) {
  return enqueue(work_item{cpu_launch::copy_of(launch), nullptr, nullptr, 0});
}

profiled_submission cpu_stream::submit_profiled(const launch_descriptor& launch,
                                                launch_path::read_when) {
  auto* const timing = timings_->acquire();
  std::uint64_t point = 0;
  try {
    point = enqueue(work_item{cpu_launch::copy_of(launch), nullptr, timing, 0});
  } catch (...) {
    timings_->let_go(timing);
    timings_->let_go(timing);
    throw;
  }
  if (point == 0) {
    // Recorded, not queued: neither the worker nor a measurement will hold the record.
    timings_->let_go(timing);
    timings_->let_go(timing);
    return profiled_submission{0, std::nullopt, launch_path::capture_refusal};
  }
  return profiled_submission{
      point, profile_duration{cpu_resolver{timings_, timing}, timing_method::device}, {}};
}

bool cpu_stream::record(const launch_descriptor& launch) {
  auto copy = cpu_launch::copy_of(launch);
  std::lock_guard lock{mutex_};
  if (!capture_.open()) return false;
  capture_.add(std::move(copy));
  return true;
}

std::uint64_t cpu_stream::submit_replay(std::shared_ptr<const std::vector<cpu_launch>> launches) {
  return enqueue(work_item{cpu_launch{}, std::move(launches), nullptr, 0});
}

std::uint64_t cpu_stream::enqueue(work_item item) {
  if (inherited_through_fork()) [[unlikely]] {
    throw device_error{fmt::format(
        "launchwatch: stream {} of {}:{} was made before this process was forked, and its worker "
        "thread stayed with the parent; make the pinned client again in the child (a thread's own "
        "streams are made anew there by themselves)",
        id(), owner_->backend(), owner_->index())};
  }
  std::uint64_t point = 0;
  {
    std::lock_guard lock{mutex_};
    if (capture_.open() && !item.replay) {
      capture_.add(std::move(item.launch));
      return 0;
    }
    point = item.point = ++submitted_;
    queue_.push_back(std::move(item));
    // Started on first use, so a thread that only reads or syncs never costs a worker.
    if (!worker_.joinable()) {
      worker_ = std::thread{[this] {
        name_this_thread("lw-cpu-stream");
        run_worker();
      }};
    }
  }
  work_ready_.notify_one();
  return point;
}

void cpu_stream::run_worker() {
  // The worker takes everything queued at once and hands back the emptied vector, so the queue's
  // storage is reused from batch to batch and a launch allocates nothing to be queued.
  std::vector<work_item> batch;
  for (;;) {
    {
      std::unique_lock lock{mutex_};
      work_ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      batch.swap(queue_);
    }
    for (auto& item : batch) run(item);
    batch.clear();
  }
}

void cpu_stream::run(work_item& item) {
  if (item.replay) {
    for (const auto& launch : *item.replay) execute(launch, item.point);
  } else if (item.timing != nullptr) {
    // The worker stamps the window itself, around the kernel and nothing else: both ends on the
    // steady clock, and nobody waited for it.
    auto* const timing = std::exchange(item.timing, nullptr);
    timing->start = std::chrono::steady_clock::now();
    execute(item.launch, item.point);
    timing->end = std::chrono::steady_clock::now();
    timing->done.store(true, std::memory_order_release);
    timing->done.notify_all();
    timings_->let_go(timing);
  } else {
    execute(item.launch, item.point);
  }
  {
    std::lock_guard lock{mutex_};
    completed_ = item.point;
    completed_relaxed_.store(item.point, std::memory_order_release);
  }
  progressed_.notify_all();
}

void cpu_stream::execute(const cpu_launch& launch, std::uint64_t point) noexcept {
  const std::uint64_t cubes = launch.geometry.count.total();
  const std::uint64_t units = cubes * launch.geometry.dim.total();
  try {
    auto& pool = cpu_pool::instance();
    if (cubes < 2 || units < units_worth_spreading || pool.size() < 2) {
      launch.entry(launch.kernel.data(), launch.geometry, 0, cubes);
    } else {
      pool.run(
          cubes,
          [](void* context, std::uint64_t first, std::uint64_t end) {
            const auto& l = *static_cast<const cpu_launch*>(context);
            l.entry(l.kernel.data(), l.geometry, first, end);
          },
          const_cast<cpu_launch*>(&launch));
    }
  } catch (...) {
    const auto thrown = std::current_exception();
    std::lock_guard lock{mutex_};
    if (!failure_) {
      // Should the message not fit in memory, the kernel's own exception is kept.
      failure_.keep(kernel_failed(launch.name, *owner_, id(), describe(thrown), thrown), point);
    }
  }
}

void cpu_stream::wait(std::uint64_t point) {
  // In a forked child nothing will ever run here: what was queued stayed with the parent.
  if (inherited_through_fork()) [[unlikely]] return;
  std::unique_lock lock{mutex_};
  progressed_.wait(lock, [&] { return completed_ >= point || point > submitted_; });
}

std::uint64_t cpu_stream::last_point() const noexcept {
  std::lock_guard lock{mutex_};
  return submitted_;
}

bool cpu_stream::passed(std::uint64_t point) const noexcept {
  return completed_relaxed_.load(std::memory_order_acquire) >= point;
}

std::exception_ptr cpu_stream::take_failure() noexcept {
  if (inherited_through_fork()) [[unlikely]] return nullptr;
  std::lock_guard lock{mutex_};
  return failure_.take();
}

std::exception_ptr cpu_stream::failure_through(std::uint64_t point) const noexcept {
  if (inherited_through_fork()) [[unlikely]] return nullptr;
  std::lock_guard lock{mutex_};
  return failure_.through(point);
}

void cpu_stream::begin_capture() {
  std::lock_guard lock{mutex_};
  capture_.begin();
}

std::unique_ptr<recorded_graph> cpu_stream::end_capture() {
  std::vector<cpu_launch> recorded;
  {
    std::lock_guard lock{mutex_};
    recorded = capture_.end();
  }
  return std::make_unique<cpu_graph>(*owner_, std::move(recorded));
}

bool cpu_stream::capturing() const noexcept { return capture_.open(); }

}  // namespace launchwatch::detail
