#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// conformance_kernels.hpp's where_am_i.
struct lw_args { lw_span_u64 values; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i < kernel.values.size) kernel.values.data.at[uint(i)] = lw_cube_index() * 4096 + lw_unit_index() + 1;
}
