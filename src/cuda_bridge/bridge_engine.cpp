// The CUDA bridge's engine: CUPTI's launch callbacks through launchwatch's launch path.
//
// Per launch, on the issuing thread (research/cuda-bridge.md §6): the driver domain's launch ids
// only (a runtime launch nests the driver's, same correlation id, so one domain reports each launch
// once, and libraries that bypass the runtime are caught); at ENTER, before submission, the launch
// is reported and the timing decided (launch_path::begin_issue); at EXIT, after submission, its
// measurement is routed (finish_issue). Between the two the thread keeps what ENTER decided.
#include "bridge_engine.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <utility>

#include <dlfcn.h>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/launch_path.hpp>

#include "backend/cuda/own_submit.hpp"
#include "diagnostics.hpp"
#include "inside_cuda_init.hpp"
#include "versions.hpp"
#include "kernel_symbols.hpp"
#include "launch_watch_writer.hpp"
#include "logger/environment.hpp"
#include "observation_slot.hpp"

namespace launchwatch::detail {
namespace cuda_bridge {

/// What a thread keeps between a launch's ENTER and EXIT callbacks, and its caches. Trivially
/// destructible, so reaching it costs a thread-local address and nothing at thread exit.
struct thread_state {
  bool open = false;
  bool awaiting = false;
  /// The engine generation inside whose callbacks this thread is in a call of the explicit graph API
  /// that adds a node (cuGraphAddKernelNode, cuGraphAddNode), 0 when it is in none: a kernel node
  /// CUPTI says was created meanwhile is that call's (not a capture's, nor a copy made by
  /// cudaGraphInstantiate, which CUPTI also announces as created). A generation, not a flag, so a
  /// call whose EXIT never came (its engine was torn down between) misleads no later engine.
  std::uint64_t adding_node = 0;
  std::uint64_t generation = 0;
  std::uint32_t correlation = 0;
  launch_info info;
  launch_path::issue_decision decision;
  std::string_view refusal;
  void* stream = nullptr;  // the launch's CUstream, for the closing event
  // The device of the context last seen: launches of one thread mostly stay on one.
  void* device_context = nullptr;
  int device = 0;
  // A pair of events for `resolved` timing, on the context they were made in; reused by every
  // launch of the thread, since a resolved measurement is read before the launch returns. Not
  // destroyed at thread exit (CUDA may be gone by then): two events a thread.
  void* event_context = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  symbol_cache symbols;
};

namespace {

thread_local thread_state this_thread;

std::atomic<std::uint64_t> generations{1};

// The engine the watch listener switches; set while one lives.
std::mutex listener_mutex;
cuda_bridge_engine* listening = nullptr;

constexpr CUpti_CallbackId launch_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};
constexpr CUpti_CallbackId add_node_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode,
    CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode,
    CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2,
};

constexpr CUpti_CallbackId graph_launch_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

/// Whether `id` is one of `ids`.
template <std::size_t N>
bool one_of(const CUpti_CallbackId (&ids)[N], CUpti_CallbackId id) noexcept {
  for (const auto each : ids) {
    if (id == each) return true;
  }
  return false;
}

bool is_launch(CUpti_CallbackId id) noexcept { return one_of(launch_ids, id); }

bool is_add_node(CUpti_CallbackId id) noexcept { return one_of(add_node_ids, id); }

bool is_per_thread(CUpti_CallbackId id) noexcept {
  return id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
         id == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

/// The grid, block and stream of a launch, from the driver call's parameters.
struct launch_params {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  CUstream stream = nullptr;
};

launch_params params_of(CUpti_CallbackId id, const void* parameters) noexcept {
  launch_params p;
  if (parameters == nullptr) return p;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    const auto& ex = *static_cast<const cuLaunchKernelEx_params*>(parameters);
    if (ex.config == nullptr) return p;
    const CUlaunchConfig& c = *ex.config;
    p.grid = {c.gridDimX, c.gridDimY, c.gridDimZ};
    p.block = {c.blockDimX, c.blockDimY, c.blockDimZ};
    p.stream = c.hStream;
    return p;
  }
  // cuLaunchKernel and cuLaunchCooperativeKernel share these leading fields.
  const auto& k = *static_cast<const cuLaunchKernel_params*>(parameters);
  p.grid = {k.gridDimX, k.gridDimY, k.gridDimZ};
  p.block = {k.blockDimX, k.blockDimY, k.blockDimZ};
  p.stream = k.hStream;
  return p;
}

/// The stream a per-thread launch with a null stream means.
CUstream effective_stream(CUpti_CallbackId id, CUstream stream) noexcept {
  return stream == nullptr && is_per_thread(id) ? CU_STREAM_PER_THREAD : stream;
}

/// launch_info::stream for a foreign stream: its handle, unique while it lives; the default streams
/// (null, legacy, per-thread handles 0-2) are numbered per context, so two devices' never merge.
std::uint64_t stream_number(CUstream stream, CUcontext context) noexcept {
  const auto handle = reinterpret_cast<std::uintptr_t>(stream);
  if (handle > 2) return handle;
  return reinterpret_cast<std::uintptr_t>(context) | handle;
}

std::string cupti_error(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown";
  return fmt::format("{} (CUPTI error {})", text, static_cast<int>(result));
}

/// A function of the CUDA driver already loaded in the process, or null. Looked up in the driver
/// itself rather than through the runtime, which cannot be called inside cuInit (inside_cuda_init.hpp),
/// and without linking libcuda, so a program built with the bridge still starts without a driver.
void* loaded_driver_function(const char* name) noexcept {
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return nullptr;
  void* function = ::dlsym(driver, name);
  ::dlclose(driver);  // the process keeps its own reference: the driver stays loaded
  return function;
}

/// The versions in play (the driver's from the loaded driver: the runtime cannot be asked inside
/// cuInit, where the runtime's version is the one built against).
version_numbers versions_in_play() {
  version_numbers v;
  v.cupti_built = CUPTI_API_VERSION;
  (void)cuptiGetVersion(&v.cupti_loaded);
  if (auto* get = reinterpret_cast<CUresult (*)(int*)>(loaded_driver_function("cuDriverGetVersion"))) {
    (void)get(&v.driver);
  }
  v.runtime = CUDART_VERSION;
  if (!constructing_inside_cuda_init()) (void)cudaRuntimeGetVersion(&v.runtime);
  return v;
}

std::string versions() { return describe(versions_in_play()); }

[[noreturn]] void unavailable(cuda_bridge_unavailable::reason why, const std::string& message,
                              std::string holder = {}) {
  throw cuda_bridge_unavailable{why, "launchwatch::cuda_bridge: " + message, std::move(holder)};
}

/// Throws cuda_bridge_unavailable unless the runtime sees a device.
void require_a_device() {
  using reason = cuda_bridge_unavailable::reason;
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status == cudaSuccess && devices > 0) return;
  (void)cudaGetLastError();
  if (status == cudaErrorInsufficientDriver) {
    unavailable(reason::incompatible,
                fmt::format("the CUDA driver is older than the CUDA runtime ({}): {}. Update the "
                            "driver, or run with the runtime it supports.",
                            versions(), cudaGetErrorString(status)));
  }
  unavailable(reason::no_device,
              fmt::format("no CUDA device is available ({}), so there are no CUDA launches to "
                          "watch. Run on a machine with an NVIDIA GPU and its driver.",
                          status == cudaSuccess ? "the driver reports 0 devices"
                                                : cudaGetErrorString(status)));
}

constexpr std::string_view capture_refusal =
    "the stream is recording a CUDA graph: the kernel runs at each replay, not now";

/// A `resolved` measurement: two events on the launch's stream, read at once.
struct event_resolver {
  cudaEvent_t start;
  cudaEvent_t end;
  std::optional<profile_ticks> operator()() const noexcept {
    float milliseconds = 0;
    if (cudaEventSynchronize(end) != cudaSuccess ||
        cudaEventElapsedTime(&milliseconds, start, end) != cudaSuccess) {
      (void)cudaGetLastError();
      return std::nullopt;
    }
    // Events give a length on the device; the window is placed where the host saw it end.
    const instant closed = std::chrono::steady_clock::now();
    const auto length = std::chrono::duration_cast<instant::duration>(
        std::chrono::duration<double, std::milli>{milliseconds});
    return profile_ticks::from_start_end(closed - length, closed);
  }
};

}  // namespace

}  // namespace cuda_bridge

using cuda_bridge::thread_state;

cuda_bridge_engine::cuda_bridge_engine(const cuda_bridge_options& options)
    : options_{options}, generation_{cuda_bridge::generations.fetch_add(1)} {
  using reason = cuda_bridge_unavailable::reason;
  if (options_.read_environment) {
    if (const auto on = cupti_from_environment(); on && !*on) {
      cuda_bridge::unavailable(reason::turned_off,
                         fmt::format("{}=off turns the CUDA bridge off, so only launchwatch's own "
                                     "launches are seen. Unset it (or set it to on) to watch every "
                                     "CUDA kernel of the process.",
                                     cupti_variable));
    }
  }
  // Inside cuInit the runtime cannot be asked, and the driver being initialised says enough.
  if (!cuda_bridge::constructing_inside_cuda_init()) cuda_bridge::require_a_device();
  if (const auto misfit = cuda_bridge::versions_misfit(cuda_bridge::versions_in_play())) {
    cuda_bridge::unavailable(reason::incompatible, *misfit);
  }

  std::array<char, 256> holder{};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "launchwatch";
  params.oldSubscriberName = holder.data();
  params.oldSubscriberSize = holder.size();
  if (const CUptiResult r = cuptiSubscribe_v2(&subscriber_, &on_callback, this, &params);
      r != CUPTI_SUCCESS) {
    subscriber_ = nullptr;
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      std::string name{holder.data(), ::strnlen(holder.data(), holder.size())};
      if (name.empty()) name = "<not named>";
      cuda_bridge::unavailable(
          reason::cupti_in_use,
          fmt::format("CUPTI is in use by '{}' (Nsight Systems or Compute, compute-sanitizer, "
                      "cuda-gdb, the PyTorch profiler or another tool's injection), and CUPTI has "
                      "one subscriber per process; launchwatch sees only its own launches. Run "
                      "without that tool to watch every CUDA kernel.",
                      name),
          name);
    }
    if (r == CUPTI_ERROR_NOT_INITIALIZED) {
      cuda_bridge::unavailable(reason::incompatible,
                         fmt::format("CUPTI could not initialise: {}; the versions may not fit "
                                     "({}).",
                                     cuda_bridge::cupti_error(r), cuda_bridge::versions()));
    }
    cuda_bridge::unavailable(reason::cupti_failed,
                       fmt::format("cuptiSubscribe_v2 failed: {}", cuda_bridge::cupti_error(r)));
  }

  // From here a failure must give CUPTI back before it throws.
  const auto fail = [&](const char* call, CUptiResult r) {
    (void)cuptiUnsubscribe(subscriber_);
    (void)cuptiFinalize();
    subscriber_ = nullptr;
    cuda_bridge::unavailable(reason::cupti_failed,
                       fmt::format("{} failed: {} ({})", call, cuda_bridge::cupti_error(r),
                                   cuda_bridge::versions()));
  };
  std::function<void(const cuda_bridge::kernel_record&)> others;
  std::function<bool()> others_pending;
  if (options_.graph_replays == cuda_graph_replays::per_node) {
    others = [this](const cuda_bridge::kernel_record& record) { graphs_.on_record(record); };
    others_pending = [this] { return graphs_.pending(); };
  }
  records_ = std::make_shared<cuda_bridge::kernel_records>(options_.flush_period, options_.record_timeout,
                                                     std::move(others), std::move(others_pending));
  if (const int r = records_->start(); r != CUPTI_SUCCESS) {
    records_.reset();
    fail("registering CUPTI's activity callbacks", static_cast<CUptiResult>(r));
  }
  const auto enable = [&](CUpti_CallbackDomain domain, CUpti_CallbackId id) {
    if (const CUptiResult r = cuptiEnableCallback(1, subscriber_, domain, id); r != CUPTI_SUCCESS) {
      records_->close();
      fail("cuptiEnableCallback", r);
    }
  };
  if (options_.capture_range == cuda_capture_range::cuda_profiler_api) {
    in_range_.store(false, std::memory_order_relaxed);
    enable(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    enable(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
    enable(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    enable(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
  }
  if (options_.graph_replays == cuda_graph_replays::per_node) {
    enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  }
  // The legacy-stream symbol: a per-thread launch's stream is passed as CU_STREAM_PER_THREAD.
  stream_is_capturing_ =
      reinterpret_cast<int (*)(void*, int*)>(cuda_bridge::loaded_driver_function("cuStreamIsCapturing"));
  kernel_node_params_ = reinterpret_cast<decltype(kernel_node_params_)>(
      cuda_bridge::loaded_driver_function("cuGraphKernelNodeGetParams_v2"));
  function_name_ = reinterpret_cast<decltype(function_name_)>(cuda_bridge::loaded_driver_function("cuFuncGetName"));
  kernel_name_ = reinterpret_cast<decltype(kernel_name_)>(cuda_bridge::loaded_driver_function("cuKernelGetName"));
  current_context_ = reinterpret_cast<decltype(current_context_)>(cuda_bridge::loaded_driver_function("cuCtxGetCurrent"));
  // Nodes added by the explicit graph API are launches recorded into a graph, and are reported
  // whatever graph_replays says (the node-adding calls mark the thread, GRAPHNODE_CREATED names the
  // node); per_node also links captured nodes to their replays.
  enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
  for (const auto id : cuda_bridge::add_node_ids) enable(CUPTI_CB_DOMAIN_DRIVER_API, id);
  // For after_cuda_runtime_initialised: a context is created once the runtime is up.
  enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  if (options_.trace_kernels_from_start || options_.graph_replays == cuda_graph_replays::per_node) {
    if (!ensure_kernel_records()) {
      records_->close();
      fail("cuptiActivityEnable(CONCURRENT_KERNEL)", CUPTI_ERROR_UNKNOWN);
    }
  }
  {
    std::lock_guard lock{cuda_bridge::listener_mutex};
    cuda_bridge::listening = this;
  }
  launch_watch_writer::listen(&on_watch_change);
  apply_watch_state();
}

cuda_bridge_engine::~cuda_bridge_engine() { teardown(); }

void cuda_bridge_engine::teardown() noexcept {
  {
    std::lock_guard lock{cuda_bridge::listener_mutex};
    cuda_bridge::listening = nullptr;
    launch_watch_writer::listen(nullptr);
  }
  {
    std::lock_guard lock{toggle_mutex_};
    for (const auto id : cuda_bridge::launch_ids) {
      (void)cuptiEnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
    }
    for (const auto id : cuda_bridge::graph_launch_ids) {
      (void)cuptiEnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
    }
    launch_callbacks_on_ = false;
  }
  // Callbacks already running finish before anything they touch goes away.
  alive_.store(false, std::memory_order_seq_cst);
  while (in_flight_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  synchronize_seen_devices();
  records_->close();
  graphs_.forget_pending();
  if (kernel_records_on_.load(std::memory_order_acquire)) {
    (void)cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  (void)cuptiUnsubscribe(subscriber_);
  // Without it launches stay slower for the rest of the process (research/cuda-bridge.md §4).
  (void)cuptiFinalize();
}

void cuda_bridge_engine::on_watch_change() noexcept {
  std::lock_guard lock{cuda_bridge::listener_mutex};
  if (cuda_bridge::listening != nullptr) cuda_bridge::listening->apply_watch_state();
}

void cuda_bridge_engine::apply_watch_state() noexcept {
  // Enabled launch ids cost every launch CUPTI's dispatch (+0.3-0.5 µs) even when the callback
  // returns at once, so they are on only while something watches.
  std::lock_guard lock{toggle_mutex_};
  const bool want = launch_path::watched();
  if (want == launch_callbacks_on_) return;
  for (const auto id : cuda_bridge::launch_ids) {
    (void)cuptiEnableCallback(want ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
  }
  if (options_.graph_replays == cuda_graph_replays::per_node) {
    for (const auto id : cuda_bridge::graph_launch_ids) {
      (void)cuptiEnableCallback(want ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
    }
  }
  launch_callbacks_on_ = want;
}

bool cuda_bridge_engine::ensure_kernel_records() noexcept {
  if (kernel_records_on_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock{records_mutex_};
  if (kernel_records_on_.load(std::memory_order_relaxed)) return true;
  if (kernel_records_failed_) return false;
  // Turned on once, at the first launch that wants device time, and never off while work runs.
  const CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    kernel_records_failed_ = true;
    diagnostics().warn(
        "The CUDA bridge could not turn on CUPTI's kernel records ({}): foreign launches are "
        "reported but not timed `deferred`.",
        cuda_bridge::cupti_error(r));
    return false;
  }
  kernel_records_on_.store(true, std::memory_order_release);
  return true;
}

bool cuda_bridge_engine::enter_callback() noexcept {
  in_flight_.fetch_add(1, std::memory_order_seq_cst);
  if (alive_.load(std::memory_order_seq_cst)) return true;
  in_flight_.fetch_sub(1, std::memory_order_seq_cst);
  return false;
}

void cuda_bridge_engine::leave_callback() noexcept {
  in_flight_.fetch_sub(1, std::memory_order_seq_cst);
}

void CUPTIAPI cuda_bridge_engine::on_callback(void* self, CUpti_CallbackDomain domain,
                                              CUpti_CallbackId id, const void* data) {
  // Nothing of the engine is touched before enter_callback() says it is still there.
  auto* engine = static_cast<cuda_bridge_engine*>(self);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cuda_bridge::is_launch(id)) {
    const auto& call = *static_cast<const CUpti_CallbackData*>(data);
    thread_state& t = cuda_bridge::this_thread;
    if (call.callbackSite == CUPTI_API_ENTER) {
      if (!launch_path::watched()) return;
      if (!engine->enter_callback()) return;
      engine->enter_launch(id, call, t);
    } else {
      if (!t.open) return;
      if (!engine->enter_callback()) return;
      engine->exit_launch(call, t);
    }
    engine->leave_callback();
    return;
  }
  if (!engine->enter_callback()) return;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    const auto& call = *static_cast<const CUpti_CallbackData*>(data);
    const bool start = id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart ||
                       id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
    const bool stop = id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop ||
                      id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cuda_bridge::is_add_node(id)) {
      cuda_bridge::this_thread.adding_node = call.callbackSite == CUPTI_API_ENTER ? engine->generation_ : 0;
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
        (id == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
         id == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz)) {
      if (call.callbackSite == CUPTI_API_ENTER) engine->enter_graph_launch(id, call);
    } else if (start && call.callbackSite == CUPTI_API_EXIT) {
      // The range opens once the profiler API call returned, closes as the stop call begins: the
      // launches between the two calls are the range, whatever the calls themselves do.
      engine->in_range_.store(true, std::memory_order_relaxed);
    } else if (stop && call.callbackSite == CUPTI_API_ENTER) {
      engine->in_range_.store(false, std::memory_order_relaxed);
    }
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    cuda_bridge::cuda_context_created();
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    engine->on_graph_node(id, *static_cast<const CUpti_ResourceData*>(data));
  }
  engine->leave_callback();
}

int cuda_bridge_engine::device_of(void* context, thread_state& t) noexcept {
  if (context == t.device_context && context != nullptr) return t.device;
  uint32_t device = 0;
  if (cuptiGetDeviceId(static_cast<CUcontext>(context), &device) != CUPTI_SUCCESS) device = 0;
  t.device_context = context;
  t.device = static_cast<int>(device);
  return t.device;
}

bool cuda_bridge_engine::capturing(void* stream) noexcept {
  if (stream_is_capturing_ == nullptr) return false;
  int status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (stream_is_capturing_(stream, &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void cuda_bridge_engine::describe(launch_info& info, const char* symbol, void* context,
                                  std::array<std::uint32_t, 3> grid,
                                  std::array<std::uint32_t, 3> block, thread_state& t) {
  const kernel_symbol named =
      t.symbols.find(symbol != nullptr ? symbol : "(unnamed CUDA kernel)", symbol_table::process());
  info = launch_info{};
  info.kernel = named.name;
  info.backend = "cuda";
  info.device = device_of(context, t);
  info.cube_count = grid;
  info.cube_dim = block;
  // A foreign launch cannot be skipped: under a dry run it runs, and says so by dry_run false.
  info.dry_run = false;
  info.collective = named.collective;
}

void cuda_bridge_engine::enter_launch(CUpti_CallbackId id, const CUpti_CallbackData& call,
                                      thread_state& t) {
  if (cuda::submitting_own_launch) {
    // Launchwatch's own backend reported this launch through the launch path already.
    own_launches_skipped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (callback_depth > 0) {
    // An observer method is launching (it called a library that launches): behaviour 13. Builds
    // that check abort here saying so; others leave the nested launch unreported rather than
    // deadlock on the slot's lock.
    check_not_in_callback("launch a CUDA kernel");
    return;
  }
  if (t.open) {
    // A launch whose EXIT never came: the callbacks were switched off between its ENTER and EXIT,
    // which happens only when nothing watched any more, so nobody wants its measurement.
    if (t.generation == generation_ && t.awaiting) records_->forget(t.correlation);
    t.open = false;
    t.awaiting = false;
  }
  if (!in_range_.load(std::memory_order_relaxed)) {
    outside_capture_range_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const cuda_bridge::launch_params params = cuda_bridge::params_of(id, call.functionParams);
  const CUstream stream = cuda_bridge::effective_stream(id, params.stream);
  launch_info& info = t.info;
  describe(info, call.symbolName, call.context, params.grid, params.block, t);
  info.stream = cuda_bridge::stream_number(stream, call.context);
  info.capturing = capturing(stream);
  info.launch_id = (generation_ << 32) | call.correlationId;

  t.generation = generation_;
  t.correlation = call.correlationId;
  t.stream = stream;
  t.refusal = {};
  t.awaiting = false;
  try {
    t.decision = launch_path::begin_issue(info);
  } catch (...) {
    return;  // nothing may cross into CUPTI; begin_issue contains observers' exceptions itself
  }
  t.open = true;
  launches_reported_.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t bit = std::uint64_t{1} << (info.device & 63);
  if ((devices_seen_.load(std::memory_order_relaxed) & bit) == 0) {
    devices_seen_.fetch_or(bit, std::memory_order_relaxed);
  }
  if (!t.decision.measure()) return;
  if (info.capturing) {
    t.refusal = cuda_bridge::capture_refusal;
  } else if (t.decision.when() == launch_path::read_when::at_once) {
    if (t.event_context != call.context || t.start == nullptr) {
      cudaEvent_t start = nullptr;
      cudaEvent_t end = nullptr;
      if (cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&end) == cudaSuccess) {
        t.start = start;
        t.end = end;
        t.event_context = call.context;
      } else {
        (void)cudaGetLastError();
        t.start = t.end = nullptr;
      }
    }
    if (t.start == nullptr || cudaEventRecord(t.start, stream) != cudaSuccess) {
      (void)cudaGetLastError();
      t.refusal = "CUDA could not record an event on its stream";
    }
  } else if (ensure_kernel_records()) {
    records_->await(call.correlationId);
    t.awaiting = true;
  } else {
    t.refusal = "CUPTI's kernel records could not be turned on";
  }
}

void cuda_bridge_engine::exit_launch(const CUpti_CallbackData& call, thread_state& t) {
  if (t.generation != generation_ || t.correlation != call.correlationId) return;
  t.open = false;
  const bool awaiting = std::exchange(t.awaiting, false);
  try {
    if (!t.decision.measure()) {
      launch_path::finish_issue(t.info, t.decision);
      return;
    }
    const bool launched = call.functionReturnValue == nullptr ||
                          *static_cast<const CUresult*>(call.functionReturnValue) == CUDA_SUCCESS;
    launch_path::measured_submission submitted;
    if (!t.refusal.empty()) {
      submitted.refusal = t.refusal;
    } else if (!launched) {
      if (awaiting) records_->forget(call.correlationId);
      submitted.refusal = "the launch failed, so no kernel ran";
    } else if (t.decision.when() == launch_path::read_when::at_once) {
      if (cudaEventRecord(t.end, static_cast<cudaStream_t>(t.stream)) == cudaSuccess) {
        submitted.profile.emplace(cuda_bridge::event_resolver{t.start, t.end}, timing_method::device);
      } else {
        (void)cudaGetLastError();
        submitted.refusal = "CUDA could not record an event on its stream";
      }
    } else {
      submitted.profile.emplace(cuda_bridge::record_resolver{records_, call.correlationId},
                                timing_method::device);
    }
    launch_path::finish_issue(t.info, t.decision, std::move(submitted));
  } catch (...) {
    // Nothing may cross into CUPTI (a failed allocation, a read that threw): the launch went on.
  }
}

void cuda_bridge_engine::enter_graph_launch(CUpti_CallbackId id, const CUpti_CallbackData& call) {
  if (cuda::submitting_own_launch || !launch_path::is_observing()) return;
  if (!in_range_.load(std::memory_order_relaxed)) return;
  if (call.functionParams == nullptr) return;
  const auto& params = *static_cast<const cuGraphLaunch_params*>(call.functionParams);
  std::uint64_t observation = 0;
  {
    auto& stack = observation_stack::get();
    std::shared_lock lock{stack.mutex};
    observation = stack.installed_serial;
  }
  if (observation == 0) return;
  thread_state& t = cuda_bridge::this_thread;
  const CUstream stream = cuda_bridge::effective_stream(id, params.hStream);
  (void)graphs_.replay_launched(call.correlationId, params.hGraph, observation,
                                device_of(call.context, t),
                                cuda_bridge::stream_number(stream, call.context));
}

void cuda_bridge_engine::on_graph_node(CUpti_CallbackId id, const CUpti_ResourceData& resource) {
  const auto* graph = static_cast<const CUpti_GraphData*>(resource.resourceDescriptor);
  if (graph == nullptr) return;
  if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    // Inside a reported launch's ENTER..EXIT on this thread: the node is that launch's kernel.
    const thread_state& t = cuda_bridge::this_thread;
    if (!t.open || t.generation != generation_ || !t.info.capturing) {
      if (t.adding_node == generation_ && graph->nodeType == CU_GRAPH_NODE_TYPE_KERNEL) {
        report_kernel_node(*graph);
      }
      return;
    }
    if (options_.graph_replays != cuda_graph_replays::per_node) return;
    std::uint64_t node = 0;
    if (cuptiGetGraphNodeId(graph->node, &node) != CUPTI_SUCCESS) return;
    graphs_.node_created(node, cuda_bridge::captured_node{t.info.kernel, t.info.launch_id});
  } else if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    std::uint64_t original = 0;
    std::uint64_t clone = 0;
    if (cuptiGetGraphNodeId(graph->originalNode, &original) != CUPTI_SUCCESS ||
        cuptiGetGraphNodeId(graph->node, &clone) != CUPTI_SUCCESS) {
      return;
    }
    graphs_.node_cloned(original, clone, graph->graphExec);
  }
}

void cuda_bridge_engine::report_kernel_node(const CUpti_GraphData& graph) {
  if (!launch_path::watched() || cuda::submitting_own_launch || callback_depth > 0) return;
  if (!in_range_.load(std::memory_order_relaxed)) {
    outside_capture_range_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (kernel_node_params_ == nullptr) return;
  CUDA_KERNEL_NODE_PARAMS params{};
  if (kernel_node_params_(graph.node, &params) != CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (params.func != nullptr && function_name_ != nullptr) {
    (void)function_name_(&name, params.func);
  } else if (params.kern != nullptr && kernel_name_ != nullptr) {
    (void)kernel_name_(&name, params.kern);
  }
  thread_state& t = cuda_bridge::this_thread;
  CUcontext context = params.ctx;
  if (context == nullptr && current_context_ != nullptr) (void)current_context_(&context);
  launch_info info;
  describe(info, name, context, {params.gridDimX, params.gridDimY, params.gridDimZ},
           {params.blockDimX, params.blockDimY, params.blockDimZ}, t);
  info.stream = 0;  // a node has no stream until a replay gives it one
  info.capturing = true;
  // Apart from the launches' ids (generation << 32 | CUPTI's 32-bit correlation id): the top bit.
  info.launch_id = (std::uint64_t{1} << 63) | (generation_ << 32) |
                   explicit_nodes_.fetch_add(1, std::memory_order_relaxed);
  try {
    const launch_path::issue_decision decision = launch_path::begin_issue(info);
    launches_reported_.fetch_add(1, std::memory_order_relaxed);
    if (decision.measure()) {
      launch_path::measured_submission refused;
      refused.refusal = cuda_bridge::capture_refusal;
      launch_path::finish_issue(info, decision, std::move(refused));
    } else {
      launch_path::finish_issue(info, decision);
    }
    if (options_.graph_replays == cuda_graph_replays::per_node) {
      std::uint64_t node = 0;
      if (cuptiGetGraphNodeId(graph.node, &node) == CUPTI_SUCCESS) {
        graphs_.node_created(node, cuda_bridge::captured_node{info.kernel, info.launch_id});
      }
    }
  } catch (...) {
    // Nothing may cross into CUPTI: the node is added whatever happened here.
  }
}

void cuda_bridge_engine::synchronize_seen_devices() noexcept {
  const std::uint64_t seen = devices_seen_.load(std::memory_order_relaxed);
  if (seen == 0) return;
  int current = 0;
  const bool known = cudaGetDevice(&current) == cudaSuccess;
  for (int device = 0; device < 64; ++device) {
    if ((seen & (std::uint64_t{1} << device)) == 0) continue;
    if (cudaSetDevice(device) == cudaSuccess) (void)cudaDeviceSynchronize();
  }
  if (known) (void)cudaSetDevice(current);
  (void)cudaGetLastError();
}

void cuda_bridge_engine::flush() {
  check_not_in_callback("flush the CUDA bridge");
  synchronize_seen_devices();
  records_->flush_until_delivered(std::chrono::seconds{2});
}

cuda_bridge_stats cuda_bridge_engine::stats() const noexcept {
  cuda_bridge_stats s;
  s.launches_reported = launches_reported_.load(std::memory_order_relaxed);
  s.own_launches_skipped = own_launches_skipped_.load(std::memory_order_relaxed);
  s.outside_capture_range = outside_capture_range_.load(std::memory_order_relaxed);
  const cuda_bridge::record_counts counts = records_->counts();
  s.measurements_delivered = counts.delivered;
  s.measurements_missing = counts.missing;
  s.records_dropped = counts.dropped;
  s.replayed_nodes_delivered = graphs_.delivered();
  return s;
}

}  // namespace launchwatch::detail
