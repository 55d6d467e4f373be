#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// transformer_kernels.hpp's gelu, tanh approximation. tanh's argument is clamped: some drivers
// compute tanh through exp(2x), which overflows to NaN past |x| of about 44, where tanh is +-1.
struct lw_args { lw_span_f32 x; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i >= kernel.x.size) return;
  const float v = kernel.x.data.at[uint(i)];
  const float inner = clamp(0.7978845608 * (v + 0.044715 * v * v * v), -15.0, 15.0);
  kernel.x.data.at[uint(i)] = 0.5 * v * (1.0 + tanh(inner));
}
