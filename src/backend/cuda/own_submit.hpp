// The CUDA bridge's old names for launch_path::reported_here (launch_path.hpp), kept only so
// src/cuda_bridge/launch_path_access.cpp compiles until it is ported onto the public launch path;
// this header goes away then.
// The CUDA backend itself uses launch_path::reported_here.
#pragma once

#include <launchwatch/launch_path.hpp>

namespace launchwatch::detail::cuda {

/// Reads as true on a thread inside a launch_path::reported_here guard (launch_path::
/// reported_here_now(): one flag for every copy of launchwatch in the process). Converts
/// implicitly, as the bool it replaces did (`return submitting_own_launch;`).
struct reported_here_reader {
  operator bool() const noexcept { return launch_path::reported_here_now(); }
};
inline constexpr reported_here_reader submitting_own_launch{};

using own_submit = launch_path::reported_here;

}  // namespace launchwatch::detail::cuda
