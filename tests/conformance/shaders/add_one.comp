#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// conformance_kernels.hpp's add_one.
struct lw_args { lw_span_i32 values; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i < kernel.values.size) kernel.values.data.at[uint(i)] += 1;
}
