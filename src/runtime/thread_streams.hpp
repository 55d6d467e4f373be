// Each thread's own stream on each device it launched to.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/backend.hpp"

namespace launchwatch::detail {

/// This thread's stream on `on`, made on first use and kept until the thread exits (a stream
/// drains its queue before it goes). A forked child makes its own: an inherited stream's worker
/// stayed with the parent.
/// Cost: a thread-local lookup by device id and one relaxed load.
const std::shared_ptr<stream>& stream_of_this_thread(device& on);

/// This thread's stream on the device with id `device_id`, or null when the thread has none (it
/// never used the device, or this is a forked child and the stream is the parent's).
const std::shared_ptr<stream>* find_stream_of_this_thread(std::uint64_t device_id);

}  // namespace launchwatch::detail
