#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// conformance_kernels.hpp's fail_at: the unit at `at` fails the launch, every other one writes 1.
struct lw_args { lw_span_i32 values; uint64_t at; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i == kernel.at) {
    lw_fail();
    return;
  }
  if (i < kernel.values.size) kernel.values.data.at[uint(i)] = 1;
}
