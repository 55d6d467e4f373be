// The README's axpy kernel ("Launching kernels"), as written there: readme_cpu.cpp launches it on
// the CPU, cuda/model.cpp from a file nvcc compiles. (guide_vulkan.cpp's is the guide's, with its
// GLSL twin.)
#pragma once
#include <launchwatch/runtime/client.hpp>

struct axpy {                                      // a kernel: an aggregate function object
  float a;
  launchwatch::device_span<const float> x;
  launchwatch::device_span<float> y;
  LAUNCHWATCH_HOST_DEVICE void operator()(launchwatch::unit u) const {
    auto i = u.absolute_pos();
    if (i < y.size()) y[i] += a * x[i];
  }
};
