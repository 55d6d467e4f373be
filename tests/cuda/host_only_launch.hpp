// A launch issued from a file that g++, not nvcc, compiles.
#pragma once

#include <launchwatch/runtime/client.hpp>

namespace launchwatch::cuda_testing {

/// Launches `host_only_fill` over `out` through `on`, from host_only_launch.cpp: a file compiled as
/// plain C++, where no CUDA entry can be instantiated.
void launch_from_a_host_only_file(const client& on, buffer<int>& out);

}  // namespace launchwatch::cuda_testing
