#include "cupti_peers.hpp"

#include <cupti.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

namespace launchwatch::peers {

void check_cupti(int result, const char* call) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  if (cuptiGetResultString(static_cast<CUptiResult>(result), &text) != CUPTI_SUCCESS ||
      text == nullptr) {
    text = "(no description)";
  }
  throw std::runtime_error{std::string{call} + " failed: " + text + " (CUPTI error " +
                           std::to_string(result) + ")"};
}

std::string cupti_version() {
  uint32_t version = 0;
  if (cuptiGetVersion(&version) != CUPTI_SUCCESS) return "unknown";
  return "API " + std::to_string(version);
}

// ---------------------------------------------------------------------------------------------
// Callback subscriber.

namespace {

void CUPTIAPI on_runtime_api(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  if (id != CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) return;
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite != CUPTI_API_ENTER) return;
  static_cast<cupti_launch_subscriber*>(userdata)->note_launch(info->symbolName);
}

}  // namespace

cupti_launch_subscriber::~cupti_launch_subscriber() {
  try {
    detach();
  } catch (...) {
    // A destructor must not throw; the process is ending its use of CUPTI either way.
  }
}

void cupti_launch_subscriber::attach() {
  if (subscriber_ != nullptr) return;
  CUpti_SubscriberHandle handle = nullptr;
  check_cupti(cuptiSubscribe(&handle, &on_runtime_api, this), "cuptiSubscribe");
  subscriber_ = handle;
  check_cupti(cuptiEnableCallback(1, handle, CUPTI_CB_DOMAIN_RUNTIME_API,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
              "cuptiEnableCallback(cudaLaunchKernel)");
}

void cupti_launch_subscriber::detach() {
  if (subscriber_ == nullptr) return;
  auto handle = static_cast<CUpti_SubscriberHandle>(subscriber_);
  subscriber_ = nullptr;
  check_cupti(cuptiUnsubscribe(handle), "cuptiUnsubscribe");
}

// ---------------------------------------------------------------------------------------------
// Activity tracer.

namespace {

// 8 MiB holds about 40 000 kernel records: a batch's worth, so a batch costs one or two buffers,
// the way Kineto sizes them.
constexpr std::size_t buffer_bytes = std::size_t{8} << 20;
constexpr std::size_t record_alignment = 8;  // ACTIVITY_RECORD_ALIGNMENT

struct tracer_state {
  std::mutex mutex;         // CUPTI may complete buffers on its own thread
  bool registered = false;  // buffer callbacks; cuptiFinalize forgets them
  bool keep_records = false;
  std::uint64_t delivered = 0;
  std::uint64_t dropped = 0;
  std::vector<kernel_record> records;
};

tracer_state& state() {
  static tracer_state instance;
  return instance;
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(record_alignment, buffer_bytes));
  *size = *buffer != nullptr ? buffer_bytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                  size_t /*size*/, size_t valid_size) {
  tracer_state& s = state();
  {
    std::lock_guard lock{s.mutex};
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          record->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
        continue;
      }
      ++s.delivered;
      if (!s.keep_records) continue;
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      s.records.push_back(kernel_record{kernel->start, kernel->end, kernel->correlationId,
                                        kernel->streamId, kernel->name});
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) {
      s.dropped += dropped;
    }
  }
  std::free(buffer);
}

}  // namespace

cupti_kernel_tracer::~cupti_kernel_tracer() {
  try {
    disable();
  } catch (...) {
    // See cupti_launch_subscriber's destructor.
  }
}

void cupti_kernel_tracer::enable(bool keep_records) {
  bool registered = false;
  {
    std::lock_guard lock{state().mutex};
    registered = state().registered;
    state().keep_records = keep_records;
  }
  if (!registered) {
    check_cupti(cuptiActivityRegisterCallbacks(&on_buffer_requested, &on_buffer_completed),
                "cuptiActivityRegisterCallbacks");
    std::lock_guard lock{state().mutex};
    state().registered = true;
  }
  if (enabled_) return;
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
              "cuptiActivityEnable(CONCURRENT_KERNEL)");
  enabled_ = true;
}

void cupti_kernel_tracer::flush(bool forced) {
  check_cupti(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0),
              "cuptiActivityFlushAll");
}

void cupti_kernel_tracer::disable() {
  if (!enabled_) return;
  enabled_ = false;
  check_cupti(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
              "cuptiActivityDisable(CONCURRENT_KERNEL)");
  flush(true);
}

std::uint64_t cupti_kernel_tracer::take_count() noexcept {
  std::lock_guard lock{state().mutex};
  const std::uint64_t count = state().delivered;
  state().delivered = 0;
  return count;
}

std::vector<kernel_record> cupti_kernel_tracer::take_records() {
  std::lock_guard lock{state().mutex};
  std::vector<kernel_record> out;
  out.swap(state().records);
  return out;
}

std::uint64_t cupti_kernel_tracer::dropped() const noexcept {
  std::lock_guard lock{state().mutex};
  return state().dropped;
}

void cupti_detach_process() {
  check_cupti(cuptiFinalize(), "cuptiFinalize");
  std::lock_guard lock{state().mutex};
  state().registered = false;
}

}  // namespace launchwatch::peers
