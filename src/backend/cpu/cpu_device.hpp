// One CPU device: host memory with its own tag (its streams, graphs and timing slots have headers
// of their own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "runtime/backend.hpp"

namespace launchwatch::detail {

/// A CPU device: host memory with its own tag, and streams of worker threads.
class cpu_device final : public device, public std::enable_shared_from_this<cpu_device> {
 public:
  explicit cpu_device(int index);

  std::string_view backend() const noexcept override { return "cpu"; }
  int index() const noexcept override { return index_; }
  std::string name() const override;
  const device_limits& limits() const noexcept override { return limits_; }

  void* allocate(std::size_t bytes, stream& on) override;
  void deallocate(void* memory, std::size_t bytes,
                  std::span<const stream_point> after) noexcept override;
  void zero(void* memory, std::size_t bytes, stream& on) override;
  void copy_to_device(void* destination, const void* source, std::size_t bytes,
                      stream& on) override;
  void copy_to_host(void* destination, const void* source, std::size_t bytes,
                    stream& on) override;
  std::shared_ptr<stream> create_stream() override;

 private:
  int index_;
  device_limits limits_;
};

}  // namespace launchwatch::detail
