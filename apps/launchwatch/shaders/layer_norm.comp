#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// transformer_kernels.hpp's layer_norm, one unit per row.
struct lw_args { lw_span_f32 x; lw_span_f32 gamma; lw_span_f32 beta; lw_span_f32 y; uint rows; uint width; float epsilon; };
LW_BIND_ARGS
void main() {
  const uint64_t row = lw_absolute_pos();
  if (row >= kernel.rows) return;
  const uint base = uint(row) * kernel.width;
  float mean = 0.0;
  for (uint c = 0u; c < kernel.width; ++c) mean += kernel.x.data.at[base + c];
  mean /= float(kernel.width);
  float variance = 0.0;
  for (uint c = 0u; c < kernel.width; ++c) {
    const float d = kernel.x.data.at[base + c] - mean;
    variance += d * d;
  }
  variance /= float(kernel.width);
  const float scale = 1.0 / sqrt(variance + kernel.epsilon);
  for (uint c = 0u; c < kernel.width; ++c) {
    kernel.y.data.at[base + c] =
        (kernel.x.data.at[base + c] - mean) * scale * kernel.gamma.data.at[c] + kernel.beta.data.at[c];
  }
}
