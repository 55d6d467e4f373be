#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// transformer_kernels.hpp's softmax_rows, in place, one unit per row.
struct lw_args { lw_span_f32 values; uint rows; uint width; };
LW_BIND_ARGS
void main() {
  const uint64_t row = lw_absolute_pos();
  if (row >= kernel.rows) return;
  const uint base = uint(row) * kernel.width;
  float largest = uintBitsToFloat(0xff800000u);
  for (uint c = 0u; c < kernel.width; ++c) largest = max(largest, kernel.values.data.at[base + c]);
  float sum = 0.0;
  for (uint c = 0u; c < kernel.width; ++c) {
    const float e = exp(kernel.values.data.at[base + c] - largest);
    kernel.values.data.at[base + c] = e;
    sum += e;
  }
  for (uint c = 0u; c < kernel.width; ++c) kernel.values.data.at[base + c] /= sum;
}
