#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// transformer_kernels.hpp's attention_mix: out[i, h*hw + d] = sum_j p[h, i, j] * v_j[h*hw + d].
struct lw_args { lw_span_f32 probabilities; lw_span_f32 qkv; lw_span_f32 out_values; uint tokens; uint heads; uint head_width; };
LW_BIND_ARGS
void main() {
  const uint model_width = kernel.heads * kernel.head_width;
  const uint64_t i = lw_absolute_pos();
  if (i >= uint64_t(kernel.tokens) * model_width) return;
  const uint query = uint(i) / model_width;
  const uint column = uint(i) % model_width;
  const uint h = column / kernel.head_width;
  const uint p = (h * kernel.tokens + query) * kernel.tokens;
  float sum = 0.0;
  for (uint key = 0u; key <= query; ++key) {
    sum += kernel.probabilities.data.at[p + key] * kernel.qkv.data.at[key * 3u * model_width + 2u * model_width + column];
  }
  kernel.out_values.data.at[uint(i)] = sum;
}
