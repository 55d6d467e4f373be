// client::cpu(): the CPU devices handed out, one per index, for the process.
#include <launchwatch/runtime/client.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "backend/cpu/cpu_device.hpp"
#include "core/interface/fork_locks.hpp"

namespace launchwatch {
namespace detail {
namespace {

/// The CPU devices handed out, by index.
struct cpu_devices {
  std::mutex mutex;
  std::map<int, std::shared_ptr<cpu_device>> by_index;

  static cpu_devices& get() {
    // Never destroyed: clients may be created and used by threads still running at exit.
    static auto* const devices = new cpu_devices;
    return *devices;
  }
};

// A thread creating a client at the fork would leave the table locked in the child, whose first
// client::cpu() would wait forever (fork_locks.hpp: cpu_devices).
[[maybe_unused]] const bool devices_enrolled =
    fork_locks::enroll(fork_locks::rank::cpu_devices,
                       fork_locks::one_lock<[]() -> auto& { return cpu_devices::get().mutex; }>);

}  // namespace
}  // namespace detail

client client::cpu(int device_index) {
  if (device_index < 0) {
    throw std::invalid_argument{fmt::format(
        "client::cpu({}): a device index counts from 0; CPU devices are numbered 0, 1, 2, ...",
        device_index)};
  }
  // Started at every client creation, before the device is handed out: the logger reads its
  // environment once, and a bad value throws here, every time, rather than running unlogged.
  detail::start_device_runtime();
  auto& devices = detail::cpu_devices::get();
  std::lock_guard lock{devices.mutex};
  auto& entry = devices.by_index[device_index];
  if (!entry) entry = std::make_shared<detail::cpu_device>(device_index);
  return client{entry};
}

}  // namespace launchwatch
