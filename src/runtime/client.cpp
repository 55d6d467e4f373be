// The client: buffers, reads, syncs, captures and streams, common to every backend. Its launches
// are in launch.cpp, graphs in graph.cpp.

#include <launchwatch/runtime/client.hpp>

#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <launchwatch/logger.hpp>

#include "runtime/allocation.hpp"
#include "runtime/backend.hpp"
#include "runtime/graph_state.hpp"
#include "runtime/thread_streams.hpp"

namespace launchwatch {
namespace detail {
namespace {

[[noreturn]] void refuse_while_capturing(const char* what) {
  throw capture_error{fmt::format(
      "{} refused: this thread's stream is recording a graph capture, whose launches have not run "
      "and will not until the graph is replayed; end the capture (end_capture, or return from the "
      "function given to capture) first",
      what)};
}

/// Empties what an open (or failed, or abandoned) capture window kept alive, handing it over.
std::vector<std::shared_ptr<allocation>> take_captured(stream& on) {
  std::vector<std::shared_ptr<allocation>> taken;
  {
    std::lock_guard lock{on.captured.mutex};
    taken.swap(on.captured.kept);
  }
  std::sort(taken.begin(), taken.end());
  taken.erase(std::unique(taken.begin(), taken.end()), taken.end());
  return taken;
}

}  // namespace
}  // namespace detail

client::client(std::shared_ptr<detail::device> device) : device_{std::move(device)} {
  if (!device_) {
    throw std::invalid_argument{"launchwatch::client needs a device, and was given a null one"};
  }
}

const std::shared_ptr<detail::stream>& client::current_stream() const {
  if (pinned_) return pinned_;
  return detail::stream_of_this_thread(*device_);
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
  // Only a failure of what this read waited for: a later kernel on the same stream, or one on a
  // stream that never touched the buffer, is not this read's to report. Left in place, so the
  // thread that launched it still sees it at its own sync.
  for (const auto& use : uses) {
    if (auto failure = use.on->failure_through(use.point)) std::rethrow_exception(failure);
  }
  if (bytes > 0) device_->copy_to_host(out, data, bytes, *on);
}

void client::sync() const {
  std::exception_ptr failure;
  const std::shared_ptr<detail::stream>* on = &pinned_;
  if (!pinned_) on = detail::find_stream_of_this_thread(device_->id());
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
  (void)detail::take_captured(*on);
}

graph client::end_capture() const {
  const auto& on = current_stream();
  // Taken before the backend ends the window: if that throws (the capture was invalidated), the
  // buffers the window kept are let go with it rather than kept until the next capture.
  auto references = detail::take_captured(*on);
  std::unique_ptr<detail::recorded_graph> recorded;
  try {
    recorded = on->end_capture();
  } catch (...) {
    // Refused with the window still open (CUDA: ended on another thread than the one that began
    // it): the window keeps its buffers, or a launch it recorded would outlive its memory.
    if (on->capturing()) {
      std::lock_guard lock{on->captured.mutex};
      on->captured.kept.insert(on->captured.kept.end(), references.begin(), references.end());
    }
    throw;
  }
  auto state = std::make_shared<detail::graph_state>();
  state->on = on;
  state->recorded = std::move(recorded);
  state->references = std::move(references);
  return graph{std::move(state)};
}

void client::abandon_capture() const noexcept {
  try {
    const auto& on = current_stream();
    if (on->capturing()) (void)on->end_capture();
    (void)detail::take_captured(*on);
  } catch (...) {
    // Abandoning runs while another exception propagates; that one is what the caller needs.
  }
}

bool client::capturing() const {
  if (pinned_) return pinned_->capturing();
  const auto* on = detail::find_stream_of_this_thread(device_->id());
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

}  // namespace launchwatch
