// The exceptions launchwatch throws.
//
// One base, `launchwatch::error`, so a program can catch everything launchwatch reports in one
// place, and one type per kind of fault, so it can react to the fault it can handle (retry on another
// backend when one is unavailable, fix a launch configuration) and let the others propagate. Every
// message says what was wrong and what to do about it.
//
// This header is included by translation units nvcc compiles; it declares nothing `__device__`.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace launchwatch {

/// The base of every exception launchwatch throws on purpose.
///
/// Derives from std::runtime_error so code that catches standard exceptions still sees the message.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A launch was rejected before it was reported or submitted: its geometry is over the device's
/// limits, or a buffer it references belongs to another device, was destroyed, or is out of range.
///
/// Thrown on the issuing thread by `client::launch`; nothing was launched, reported or timed. Also
/// thrown by `client::read` given a buffer of another device, and by `cube_count`/`cube_dim` given a
/// negative or over-32-bit extent.
class invalid_launch : public error {
 public:
  using error::error;
};

/// A kernel failed while it ran (on the CPU backend: it threw; on CUDA: the device reported a fault).
///
/// Kernels run after `launch` returned, so the failure surfaces at the next `sync` or `read` that
/// waits for the stream it ran on. The message names the kernel; `kernel()` gives its name alone.
class kernel_failure : public error {
 public:
  /// `kernel` must refer to storage that outlives the exception (a type_name<K>() view does).
  kernel_failure(std::string_view kernel, const std::string& message)
      : error{message}, kernel_{kernel} {}

  /// The failed kernel's name, as `type_name<K>()` spells it.
  std::string_view kernel() const noexcept { return kernel_; }

 private:
  std::string_view kernel_;
};

/// An operation is not allowed while its stream is recording a graph (a read or a sync inside a
/// capture window), or a capture was misused (begun twice, ended without a beginning).
class capture_error : public error {
 public:
  using error::error;
};

/// A backend was asked for that this build or this machine cannot provide (CUDA in a build without
/// it, or on a machine without a GPU, or a device index past the last device).
class backend_unavailable : public error {
 public:
  using error::error;
};

/// The device or its driver failed an operation (an allocation, a copy, a sticky device fault).
class device_error : public error {
 public:
  using error::error;
};

/// A configuration value is wrong: an environment variable with a value launchwatch does not accept,
/// a log file it cannot write. The message names the setting and the values it accepts.
class configuration_error : public error {
 public:
  using error::error;
};

}  // namespace launchwatch
