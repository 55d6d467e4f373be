#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// conformance_kernels.hpp's axpy.
struct lw_args { float a; lw_span_f32 x; lw_span_f32 y; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i < kernel.y.size) kernel.y.data.at[uint(i)] += kernel.a * kernel.x.data.at[uint(i)];
}
