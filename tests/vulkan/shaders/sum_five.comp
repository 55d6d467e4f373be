#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// vulkan_backend_test.cpp's sum_five: five spans, 160 bytes, more than lavapipe's 128 bytes of push
// constants, so its fields travel behind an address.
struct lw_args { lw_span_i32 a; lw_span_i32 b; lw_span_i32 c; lw_span_i32 d; lw_span_i32 out_values; int bias; };
LW_BIND_ARGS
void main() {
  const uint64_t i = lw_absolute_pos();
  if (i >= kernel.out_values.size) return;
  const uint j = uint(i);
  kernel.out_values.data.at[j] = kernel.a.data.at[j] + kernel.b.data.at[j] + kernel.c.data.at[j] +
                                 kernel.d.data.at[j] + kernel.bias;
}
