// launchwatch's side of a Vulkan kernel's compute shader: the unit helpers, buffer views and the
// binding of the kernel's fields. A shader for kernel `K` starts
//
//     #version 460
//     #extension GL_GOOGLE_include_directive : require
//     #include "launchwatch.glsl"
//     struct lw_args { float a; lw_span_f32 x; lw_span_f32 y; };   // K's fields, in K's order
//     LW_BIND_ARGS
//     void main() { uint64_t i = lw_absolute_pos(); if (i < kernel.y.size) ... }
//
// and reads its fields as `kernel.<field>` (the names may differ from the C++ ones; the types and
// order may not: the kernel's bytes are copied verbatim, laid out by the `scalar` rules, which are
// C++'s for these types). A span's elements are `kernel.x.data.at[index]`.
//
// Why this binding: one way that works for every kernel. The launch pushes 16 bytes of its own
// (where to report a failure, and which launch this is), then the kernel's bytes when they fit in
// the device's push constants, or else their address (the backend compiles each shader both ways,
// LW_ARGS_IN_PUSH=1 and 0, and picks by size). Buffers are buffer device addresses.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_realtime_clock : enable

#ifndef LW_ARGS_IN_PUSH
#define LW_ARGS_IN_PUSH 1
#endif

// cube_dim arrives as specialization constants 0-2.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

// A device_span<T>: {address, size, owner device, owner allocation}, 32 bytes as in C++.
#define LW_SPAN(span_type, element_type, alignment)                                        \
  layout(buffer_reference, scalar, buffer_reference_align = alignment) buffer span_type##_memory { \
    element_type at[];                                                                       \
  };                                                                                         \
  struct span_type {                                                                         \
    span_type##_memory data;                                                                 \
    uint64_t size;                                                                           \
    uint64_t owner_device;                                                                   \
    uint64_t owner_allocation;                                                               \
  };

LW_SPAN(lw_span_f32, float, 4)
LW_SPAN(lw_span_i32, int, 4)
LW_SPAN(lw_span_u32, uint, 4)
LW_SPAN(lw_span_u64, uint64_t, 8)

// Where a unit that fails says so: the batch's failure word, set once to the launch's index + 1.
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer lw_failure_word { uint first; };
struct lw_launch_t {
  lw_failure_word failure;
  uint index;
  uint reserved;
};

#if LW_ARGS_IN_PUSH
#define LW_BIND_ARGS                                                       \
  layout(push_constant, scalar) uniform lw_push_block {                    \
    lw_launch_t launch;                                                    \
    lw_args args;                                                          \
  } lw_push;
#define kernel lw_push.args
#else
#define LW_BIND_ARGS                                                                        \
  layout(buffer_reference, scalar, buffer_reference_align = 16) buffer lw_args_memory {    \
    lw_args args;                                                                           \
  };                                                                                        \
  layout(push_constant, scalar) uniform lw_push_block {                                     \
    lw_launch_t launch;                                                                     \
    lw_args_memory memory;                                                                  \
  } lw_push;
#define kernel lw_push.memory.args
#endif

// Marks this launch failed (kernel_failure at the next sync or read of its stream, naming the
// kernel); the unit should return after it. The other units run on.
#define lw_fail() atomicCompSwap(lw_push.launch.failure.first, 0u, lw_push.launch.index + 1u)

// unit's members and functions (runtime/geometry.hpp), over the grid of this dispatch.
uint64_t lw_absolute_pos_x() { return uint64_t(gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }
uint64_t lw_absolute_pos_y() { return uint64_t(gl_WorkGroupID.y) * gl_WorkGroupSize.y + gl_LocalInvocationID.y; }
uint64_t lw_absolute_pos_z() { return uint64_t(gl_WorkGroupID.z) * gl_WorkGroupSize.z + gl_LocalInvocationID.z; }
uint64_t lw_absolute_pos() {
  const uint64_t width = uint64_t(gl_NumWorkGroups.x) * gl_WorkGroupSize.x;
  const uint64_t height = uint64_t(gl_NumWorkGroups.y) * gl_WorkGroupSize.y;
  return (lw_absolute_pos_z() * height + lw_absolute_pos_y()) * width + lw_absolute_pos_x();
}
uint lw_unit_index() { return gl_LocalInvocationIndex; }
uint64_t lw_cube_index() {
  return (uint64_t(gl_WorkGroupID.z) * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x +
         gl_WorkGroupID.x;
}

#ifdef GL_EXT_shader_realtime_clock
// The device's nanosecond clock (needs the device's shaderDeviceClock, which the backend enables
// where offered).
uint64_t lw_clock_ns() { return clockRealtimeEXT(); }
#endif
