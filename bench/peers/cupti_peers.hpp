// The CUPTI-based peers, as a user of Kineto, Nsight or a hand-written CUPTI tool would observe
// launches: a callback subscriber that sees every cudaLaunchKernel by name, and concurrent-kernel
// activity tracing that hands back each kernel's device window in buffers.
//
// Each is attached only while its own case runs and detached after (unsubscribed; disabled and
// flushed), so it cannot perturb the cases around it. The harness checks that by timing raw
// launches right after them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace launchwatch::peers {

/// Throws std::runtime_error naming the CUPTI call and CUPTI's description of `result` when it is
/// not CUPTI_SUCCESS (taken as an int so this header needs no CUPTI header).
void check_cupti(int result, const char* call);

/// CUPTI's version as "major.minor" of its API (cuptiGetVersion).
std::string cupti_version();

/// Detaches CUPTI from the process (cuptiFinalize), so that launches after it pay nothing for
/// CUPTI having been there: unsubscribing and disabling alone leave the runtime on a slower path
/// (seen on an H200: raw launches about 1 µs slower for the rest of the process). CUPTI attaches
/// again at its next use. Preconditions, from CUPTI's documentation: no subscriber, no activity
/// kind enabled, the device synchronised and the activity buffers flushed.
void cupti_detach_process();

/// A names-only tool on CUPTI's callback API: subscribed to the runtime API domain, enabled on
/// cudaLaunchKernel alone, reading the kernel's symbol name on entry and counting it.
///
/// One subscriber per process is CUPTI's rule, so this is not thread safe and not nested.
class cupti_launch_subscriber {
 public:
  cupti_launch_subscriber() = default;
  ~cupti_launch_subscriber();
  cupti_launch_subscriber(const cupti_launch_subscriber&) = delete;
  cupti_launch_subscriber& operator=(const cupti_launch_subscriber&) = delete;

  /// cuptiSubscribe + cuptiEnableCallback(cudaLaunchKernel). Throws on a CUPTI failure.
  void attach();
  /// cuptiUnsubscribe. Safe when not attached.
  void detach();

  /// cudaLaunchKernel entries seen since the last `take_count`, and resets it.
  std::uint64_t take_count() noexcept { return launches_.exchange(0, std::memory_order_relaxed); }

  /// What the callback does on each launch's entry: keep the name, count it.
  void note_launch(const char* name) noexcept {
    last_name_.store(name, std::memory_order_relaxed);
    launches_.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  void* subscriber_ = nullptr;
  std::atomic<std::uint64_t> launches_{0};
  // The last name read, so reading it cannot be optimized away.
  std::atomic<const char*> last_name_{nullptr};
};

/// One kernel's activity record, reduced to what the harness compares.
struct kernel_record {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t stream_id = 0;
  const char* name = nullptr;  ///< CUPTI's storage, shared by every record of the kernel.
};

/// Concurrent-kernel activity tracing (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) with buffer
/// callbacks: how Kineto (PyTorch's profiler) and Nsight Systems observe kernels.
///
/// `keep_records` false only counts the records, which is all a launch-cost case needs and the
/// least a real tool does with them; true also keeps each record's window for the fidelity
/// comparison. Not thread safe: one tracer per process, driven from one thread (CUPTI may deliver
/// buffers on its own thread; that part is guarded).
class cupti_kernel_tracer {
 public:
  cupti_kernel_tracer() = default;
  ~cupti_kernel_tracer();
  cupti_kernel_tracer(const cupti_kernel_tracer&) = delete;
  cupti_kernel_tracer& operator=(const cupti_kernel_tracer&) = delete;

  /// Registers the buffer callbacks (first time only) and enables concurrent-kernel records.
  void enable(bool keep_records);
  /// Delivers every completed record to the buffer callback (cuptiActivityFlushAll). Call after a
  /// synchronize: CUPTI's flush does not wait for the device. `forced` also delivers buffers with
  /// records the device has not completed.
  void flush(bool forced = false);
  /// Disables the activity kind and flushes what remains (forced). Safe when not enabled.
  void disable();

  /// Records delivered since the last `take_count`, and resets the count.
  std::uint64_t take_count() noexcept;
  /// The records kept since the last `take_records` (keep_records mode only).
  std::vector<kernel_record> take_records();
  /// Records CUPTI dropped for want of buffer space, since tracing began.
  std::uint64_t dropped() const noexcept;

 private:
  // CUPTI's buffer callbacks carry no user pointer, so what they fill lives in the .cpp, one per
  // process, which is also why there is one tracer per process.
  bool enabled_ = false;
};

}  // namespace launchwatch::peers
