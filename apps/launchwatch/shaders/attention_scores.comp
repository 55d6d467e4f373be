#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// transformer_kernels.hpp's attention_scores: causal q.k / sqrt(head_width), -inf above the diagonal.
struct lw_args { lw_span_f32 qkv; lw_span_f32 scores; uint tokens; uint heads; uint head_width; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  const uint n = kernel.tokens;
  if (i >= uint64_t(kernel.heads) * n * n) return;
  const uint h = uint(i / (uint64_t(n) * n));
  const uint query = uint(i / n) % n;
  const uint key = uint(i) % n;
  if (key > query) {
    kernel.scores.data.at[uint(i)] = uintBitsToFloat(0xff800000u);
    return;
  }
  const uint model_width = kernel.heads * kernel.head_width;
  const uint q = query * 3u * model_width + h * kernel.head_width;
  const uint k = key * 3u * model_width + model_width + h * kernel.head_width;
  float dot = 0.0;
  for (uint d = 0u; d < kernel.head_width; ++d) dot += kernel.qkv.data.at[q + d] * kernel.qkv.data.at[k + d];
  kernel.scores.data.at[uint(i)] = dot / sqrt(float(kernel.head_width));
}
