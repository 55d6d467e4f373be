#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// transformer_kernels.hpp's embed: out[t, c] = table[token[t], c] + positions[t, c].
struct lw_args { lw_span_i32 tokens; lw_span_f32 table; lw_span_f32 positions; lw_span_f32 out_values; uint width; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i >= kernel.out_values.size) return;
  const uint t = uint(i) / kernel.width;
  const uint c = uint(i) % kernel.width;
  kernel.out_values.data.at[uint(i)] =
      kernel.table.data.at[uint(kernel.tokens.data.at[t]) * kernel.width + c] + kernel.positions.data.at[uint(i)];
}
