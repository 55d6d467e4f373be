// A client: the handle through which a program allocates, launches, reads and records on a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <ranges>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <launchwatch/kernel_name.hpp>
#include <launchwatch/runtime/buffer.hpp>
#include <launchwatch/runtime/device_span.hpp>
#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/geometry.hpp>
#include <launchwatch/runtime/graph.hpp>
#include <launchwatch/runtime/kernel.hpp>

namespace launchwatch {

namespace detail {
class device;
class stream;
}  // namespace detail

/// A program's handle on one device of one backend.
///
/// Cheap to copy (two shared pointers), and copies are the same client: they allocate on the same
/// device and read the same buffers. Work is issued to streams, in-order queues on the device: by
/// default each thread that launches through a client gets a stream of its own for that device, so
/// threads never serialise behind each other's kernels and a thread's launches run in the order it
/// issued them. `pinned()` makes a client whose every thread shares one stream instead.
///
/// Every launch goes through the launch path of docs/design.md §3 on the issuing thread: an empty grid
/// returns at once; a bad configuration throws `invalid_launch` before anything is reported; then
/// the installed observer is told (`launched`), the launch is timed if the observer or the profiling
/// logger asks, and it is submitted, or only validated and prepared under a dry run.
///
/// Thread safety: every member may be called from several threads at once.
class client {
 public:
  /// The CPU backend's device `device_index` (0 by default): kernels run on a pool of threads sized
  /// to the machine, each stream's launches in order.
  ///
  /// Every index is a distinct device with its own memory tag (they share the machine's threads), so
  /// a program, or a test, can have buffers of two devices without a GPU; the same index always
  /// gives the same device. Creating the first client of a device starts the profiling logger,
  /// which reads LAUNCHWATCH_PROFILE and LAUNCHWATCH_LOG: a bad value throws configuration_error.
  /// Throws std::invalid_argument for a negative index.
  static client cpu(int device_index = 0);

  /// The CUDA device `device_index`.
  ///
  /// Throws backend_unavailable, saying why, in a build without CUDA, on a machine without a GPU, or
  /// for an index past the last device. Kernels launched through it must be launched from a file
  /// nvcc compiles (see `launch`). Defined by the CUDA backend.
  static client cuda(int device_index = 0);

  /// The HIP device `device_index`: an AMD GPU through HIP's runtime, or, in a build for HIP's
  /// NVIDIA platform (LAUNCHWATCH_HIP_PLATFORM=nvidia), an NVIDIA GPU through HIP's API over CUDA.
  ///
  /// Kernels launched through it must be launched from a file a HIP compiler compiles (see
  /// `launch`). Deferred timing stamps the device's nanosecond timer inside the kernel, as on
  /// CUDA. Throws backend_unavailable, saying why, in a build without the HIP backend, on a
  /// machine without a device HIP can use, or for an index past the last device. Defined by the
  /// HIP backend.
  static client hip(int device_index = 0);

  /// The Vulkan device `device_index` (counted over the devices that can run compute with buffer
  /// device addresses and timeline semaphores): a GPU through its vendor's driver, or the CPU
  /// through Mesa's lavapipe.
  ///
  /// Kernels launched through it must carry a compute shader (`static constexpr vulkan_shader
  /// vulkan`, see vulkan_shader.hpp). Launches are recorded into command buffers and submitted in
  /// batches (at a read, a sync, a blocking measurement, or every few hundred launches), so a
  /// launch does not pay a queue submission. Deferred timing is stamped by the launch's own shader
  /// with the device clock where the device offers VK_KHR_shader_clock's device scope (a slot per
  /// launch in flight, LAUNCHWATCH_VULKAN_CLOCK_SLOTS); otherwise, or with every slot lent, it uses
  /// timestamp queries from a budget per device (LAUNCHWATCH_VULKAN_TIMESTAMPS pairs, 4096 by
  /// default); a launch that finds that spent too is timed `system`, with one warning per process.
  /// Throws backend_unavailable, saying what to install, in a build without the backend, without a
  /// Vulkan loader or driver, or for an index past the last device; configuration_error for a bad
  /// LAUNCHWATCH_VULKAN_TIMESTAMPS, LAUNCHWATCH_VULKAN_CLOCK_SLOTS or
  /// LAUNCHWATCH_VULKAN_GRID_OVERHEAD_NS. Defined by the Vulkan backend.
  static client vulkan(int device_index = 0);

  /// A client of `device`. For backends: programs use `cpu()` or `cuda()`.
  explicit client(std::shared_ptr<detail::device> device);

  /// A buffer holding a copy of `values`, any contiguous range (std::vector, std::array,
  /// std::span...). `client.create<float>(values)` names the element type; `client.create(values)`
  /// takes the range's.
  ///
  /// Returns once the copy is done, so `values` may change right after. The element type must match
  /// the range's exactly: a conversion would be a silent copy of another kind.
  /// Cost: one allocation and one copy to the device.
  template <class T = void, std::ranges::contiguous_range Range>
  auto create(const Range& values) const {
    using element = std::remove_cv_t<std::ranges::range_value_t<Range>>;
    using value = std::conditional_t<std::is_void_v<T>, element, T>;
    static_assert(std::is_same_v<value, element>,
                  "launchwatch::client::create<T>(values): the range's elements are not T; convert "
                  "them first (create<T> copies bytes, it does not convert)");
    return make_buffer<value>(std::ranges::data(values), std::ranges::size(values));
  }

  /// A buffer holding a copy of `values`: `client.create<float>({1, 2, 3})`.
  template <class T>
  buffer<T> create(std::initializer_list<T> values) const {
    return make_buffer<T>(values.begin(), values.size());
  }

  /// A buffer of `count` elements of `T`, every byte zero (so a kernel that accumulates into it, like
  /// `y[i] += ...`, starts from zero on every backend).
  ///
  /// Throws launchwatch::error when `count * sizeof(T)` does not fit in std::size_t.
  template <class T>
  buffer<T> empty(std::size_t count) const {
    return make_buffer<T>(nullptr, count);
  }

  /// The contents of `source`, copied to the host.
  ///
  /// Waits only for the launches that referenced `source` (on any stream, and what ran before them
  /// on theirs; on CUDA, everything their streams were given so far), not for the device. Throws
  /// kernel_failure when a launch it waited for failed (only those: a later launch's failure, or
  /// another stream's, is left to the sync of the thread that launched it, and this one is left
  /// there too), capture_error when this thread's stream is recording
  /// a capture, and invalid_launch when `source` belongs to another device.
  template <class T>
  std::vector<T> read(const buffer<T>& source) const {
    std::vector<T> out(source.size());
    read_bytes(source.memory_, source.data_, out.data(), source.size_bytes());
    return out;
  }

  /// Launches `kernel` over `count` cubes of `dim` units each.
  ///
  /// `K` is a kernel (see kernel.hpp): checked at compile time. In a file nvcc compiles, the launch
  /// can run on CUDA; in one a HIP compiler compiles, on HIP. A CUDA (HIP) client given a launch
  /// from a file not compiled as CUDA (HIP) throws invalid_launch saying to compile that file so.
  /// Returns once the launch is queued (the kernel runs later, in order on this thread's stream),
  /// or at once for an empty grid.
  ///
  /// Throws invalid_launch, before anything is reported, when `dim` exceeds the device's limits or
  /// a span belongs to another device, to a destroyed buffer, or lies outside its buffer. Failures
  /// of the kernel itself surface at the next sync or read. The template parameters after `K` are
  /// internal: never name them. Cost with nothing observing: validation (per span, a registry
  /// lookup under a read lock whose readers share no cache line), one relaxed load and branch for
  /// the launch path, the backend's submission (CPU: a queue push; CUDA: cudaLaunchKernel), and per
  /// span a use recorded in this stream's own table (its lock, uncontended unless the client is
  /// pinned and shared).
  template <class K, bool AsCuda = detail::compiled_as_cuda, bool AsHip = detail::compiled_as_hip>
  void launch(const K& kernel, cube_count count, cube_dim dim) const {
    detail::check_kernel_type<K>();
    if (count.empty() || dim.empty()) return;  // Step 1: nothing launched, nothing reported.
    const auto spans = detail::kernel_spans(kernel);
    const detail::launch_descriptor launch{
        type_name<K>(),
        detail::launch_geometry{count, dim},
        static_cast<const void*>(&kernel),
        sizeof(K),
        alignof(K),
        &detail::cpu_entry<K>,
        detail::cuda_entry_address<K, AsCuda>(),
        detail::hip_entry_address<K, AsHip>(),
        spans.view(),
        is_collective<K>,
        detail::vulkan_shader_of<K>(),
    };
    issue(launch);
  }

  /// Waits for every launch issued on this thread's stream (the pinned stream for a pinned client),
  /// then writes the profiling logger's summary when it is on.
  ///
  /// Throws kernel_failure naming the kernel when one of them failed (the stream stays usable), and
  /// capture_error when the stream is recording a capture.
  void sync() const;

  /// Records the launches `record` issues on this thread's stream into a graph, without running
  /// them.
  ///
  /// Inside the window launches are validated and reported as usual but not run; a profile is
  /// refused (with a warning; the launch is still recorded); reads and syncs on the stream throw
  /// capture_error. Launches from other threads, on their own streams, are not recorded. If `record`
  /// throws, the capture is abandoned and the exception propagates.
  template <class F>
  graph capture(F&& record) const {
    begin_capture();
    try {
      std::forward<F>(record)();
    } catch (...) {
      abandon_capture();
      throw;
    }
    return end_capture();
  }

  /// Opens a capture window on this thread's stream (see `capture`). Throws capture_error if one is
  /// already open there.
  void begin_capture() const;

  /// Closes the capture window on this thread's stream and returns what it recorded. Throws
  /// capture_error if none is open.
  graph end_capture() const;

  /// Whether this thread's stream is recording a capture.
  bool capturing() const;

  /// A client of the same device whose launches, from every thread, go to one new stream of its own.
  ///
  /// For work that must run in one order whatever thread issues it, or for several streams from one
  /// thread (one pinned client each). Copies of the pinned client share the stream.
  client pinned() const;

  /// Whether this client is pinned to one stream.
  bool is_pinned() const noexcept { return pinned_ != nullptr; }

  /// The id of the stream this thread's launches go to, as `launch_info::stream` reports it.
  std::uint64_t stream_id() const;

  /// "cpu", "cuda", "hip" or "vulkan".
  std::string_view backend() const noexcept;
  /// The device's index within its backend.
  int device_index() const noexcept;
  /// The device's name, for people.
  std::string device_name() const;

  /// Whether two clients are bound to the same device (pinning aside).
  friend bool operator==(const client& a, const client& b) noexcept {
    return a.device_ == b.device_;
  }

 private:
  template <class T>
  buffer<T> make_buffer(const T* values, std::size_t count) const {
    static_assert(std::is_trivially_copyable_v<T>,
                  "launchwatch: buffer elements must be trivially copyable");
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) {  // count * sizeof(T) wraps
      throw error{"launchwatch: a buffer of " + std::to_string(count) + " elements of " +
                  std::to_string(sizeof(T)) + " bytes each overflows: its size in bytes does not "
                  "fit in std::size_t; ask for fewer elements"};
    }
    void* data = nullptr;
    span_owner owner;
    auto memory = allocate_bytes(count * sizeof(T), values, data, owner);
    return buffer<T>{std::move(memory), static_cast<T*>(data), count, owner};
  }

  std::shared_ptr<detail::allocation> allocate_bytes(std::size_t bytes, const void* initial,
                                                     void*& data, span_owner& owner) const;
  void read_bytes(const std::shared_ptr<detail::allocation>& memory, const void* data, void* out,
                  std::size_t bytes) const;
  void issue(const detail::launch_descriptor& launch) const;
  void abandon_capture() const noexcept;
  const std::shared_ptr<detail::stream>& current_stream() const;

  std::shared_ptr<detail::device> device_;
  std::shared_ptr<detail::stream> pinned_;
};

}  // namespace launchwatch
