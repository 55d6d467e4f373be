// Opening a GPU device for client::cuda() and client::hip(): the device count, the messages when
// there is no device, and one device object per index for the whole process.
#pragma once

#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include <launchwatch/errors.hpp>
#include <launchwatch/runtime/client.hpp>

#include "gpu_device.hpp"

namespace launchwatch::detail::gpu {

/// A client of device `device_index` of runtime R (client::<backend>(device_index)).
/// Throws std::invalid_argument for a negative index, backend_unavailable (saying why and what to
/// use instead) where the API sees no usable device or no such index, configuration_error for a
/// bad setting read when the device's runtime starts.
template <class R>
client open_client(int device_index) {
  const auto& words = R::wording;
  if (device_index < 0) {
    throw std::invalid_argument{fmt::format(
        "launchwatch::client::{}({}): a device index counts from 0", words.backend, device_index)};
  }
  int count = 0;
  const typename R::error status = R::get_device_count(&count);
  if (status != R::success) {
    R::clear_error();
    throw backend_unavailable{fmt::format(
        "launchwatch::client::{}({}): no usable {} device: {}GetDeviceCount failed with {} ({}). "
        "{}; use client::cpu() here",
        words.backend, device_index, words.api, words.prefix, R::error_name(status),
        R::error_string(status), words.no_device)};
  }
  if (count == 0) {
    throw backend_unavailable{
        fmt::format("launchwatch::client::{}({}): the {} driver sees no device (is {} empty?); use "
                    "client::cpu() here",
                    words.backend, device_index, words.api, words.visible_devices)};
  }
  if (device_index >= count) {
    throw backend_unavailable{fmt::format(
        "launchwatch::client::{}({}): this machine has {} {} device{} (indices 0 to {})",
        words.backend, device_index, count, words.api, count == 1 ? "" : "s", count - 1)};
  }
  // One device object per index for the whole process, as the backend contract asks. Never
  // destroyed: the API's runtime tears itself down at exit in an order a static destructor cannot
  // rely on, and the devices' streams and pools go with the process anyway.
  static std::mutex mutex;
  static auto* devices = new std::vector<std::shared_ptr<gpu_device<R>>>();
  std::lock_guard lock{mutex};
  if (devices->size() < static_cast<std::size_t>(count)) {
    devices->resize(static_cast<std::size_t>(count));
  }
  auto& slot = (*devices)[static_cast<std::size_t>(device_index)];
  if (!slot) {
    auto opened = std::make_shared<gpu_device<R>>(device_index);
    start_device_runtime();  // may throw configuration_error: then nothing is cached
    slot = std::move(opened);
  }
  return client{std::static_pointer_cast<device>(slot)};
}

}  // namespace launchwatch::detail::gpu
