#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// transformer_kernels.hpp's linear: y[r, o] = bias[o] + sum_k x[r, k] * weight[k, o].
struct lw_args { lw_span_f32 x; lw_span_f32 weight; lw_span_f32 bias; lw_span_f32 y; uint rows; uint in_width; uint out_width; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i >= uint64_t(kernel.rows) * kernel.out_width) return;
  const uint r = uint(i) / kernel.out_width;
  const uint o = uint(i) % kernel.out_width;
  float sum = kernel.bias.data.at[o];
  for (uint k = 0u; k < kernel.in_width; ++k) {
    sum += kernel.x.data.at[r * kernel.in_width + k] * kernel.weight.data.at[k * kernel.out_width + o];
  }
  kernel.y.data.at[uint(i)] = sum;
}
