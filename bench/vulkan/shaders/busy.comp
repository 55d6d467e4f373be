#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// vulkan_launch_bench.cpp's busy kernel: `rounds` dependent multiply-adds per unit, then one write.
struct lw_args { lw_span_f32 values; uint rounds; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i >= kernel.values.size) return;
  float x = float(uint(i) & 255u) * 0.001;
  for (uint r = 0u; r < kernel.rounds; ++r) x = x * 0.999 + 0.5;
  kernel.values.data.at[uint(i)] = x;
}
