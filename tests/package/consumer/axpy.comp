// axpy.comp: docs/guide.md's Vulkan example, the GLSL twin of guide_vulkan.cpp's axpy.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
struct lw_args { float a; lw_span_f32 x; lw_span_f32 y; };   // the kernel's fields, in order
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i < kernel.y.size) kernel.y.data.at[uint(i)] += kernel.a * kernel.x.data.at[uint(i)];
}
