#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// transformer_kernels.hpp's add_residual: x += y.
struct lw_args { lw_span_f32 x; lw_span_f32 y; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i < kernel.x.size) kernel.x.data.at[uint(i)] += kernel.y.data.at[uint(i)];
}
