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
// (where to report a failure, which launch this is, and a timed launch's timing slot), then the
// kernel's bytes when they fit in the device's push constants, or else their address (the backend
// compiles each shader both ways, LW_ARGS_IN_PUSH=1 and 0, and picks by size). Buffers are buffer
// device addresses.
//
// Timed launches: each shader is also compiled with LW_TIMED=1, where the kernel's main() becomes
// lw_kernel_main() and the entry below wraps it: the cube's first unit stamps the device clock into
// the launch's timing slot: the clock read at entry and again once every unit has returned (the CUDA
// backend's cuda_entry does the same with %globaltimer). Untimed launches run the shader as written.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_realtime_clock : enable
#extension GL_EXT_shader_atomic_int64 : enable

#ifndef LW_ARGS_IN_PUSH
#define LW_ARGS_IN_PUSH 1
#endif
#ifndef LW_TIMED
#define LW_TIMED 0
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
  uint timing_slot;  // which of the device's timing slots a timed launch stamps
};

#if LW_TIMED
// The timed entry reads the launch's slot through this, defined by LW_BIND_ARGS after the push
// block it reads is declared.
#define LW_TIMING_SLOT_OF_LAUNCH \
  uint lw_timing_slot_of_launch() { return lw_push.launch.timing_slot; }
#else
#define LW_TIMING_SLOT_OF_LAUNCH
#endif

#if LW_ARGS_IN_PUSH
#define LW_BIND_ARGS                                                       \
  layout(push_constant, scalar) uniform lw_push_block {                    \
    lw_launch_t launch;                                                    \
    lw_args args;                                                          \
  } lw_push;                                                               \
  LW_TIMING_SLOT_OF_LAUNCH
#define kernel lw_push.args
#else
#define LW_BIND_ARGS                                                                        \
  layout(buffer_reference, scalar, buffer_reference_align = 16) buffer lw_args_memory {    \
    lw_args args;                                                                           \
  };                                                                                        \
  layout(push_constant, scalar) uniform lw_push_block {                                     \
    lw_launch_t launch;                                                                     \
    lw_args_memory memory;                                                                  \
  } lw_push;                                                                                \
  LW_TIMING_SLOT_OF_LAUNCH
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

#if LW_TIMED
// The timed entry. The device's timing slots (backend/vulkan/clock_slots.hpp) are one buffer whose
// address is specialization constant 3: a slot is 32 lanes of 128 bytes, and a cube folds its
// stamps into lane `cube index % 32` (so a huge grid spreads its atomics over 32 cache lines) with
// fire-and-forget maxima, both after its units have returned: the entry as its complement, so both
// fields fold by maximum and an empty lane is all zeros. Nothing else: no counter, no fence; the
// backend folds the lanes into one window after the launch, in the same queue, and reads that back
// with its batch.
//
// A narrow clock (specialization constant 4: Mesa's lavapipe, whose clock keeps only its low 32
// bits) also folds each stamp with its top bit flipped, so a window that spans the clock's wrap is
// still whole in one of the two forms (the one with the shorter span).
layout(constant_id = 3) const uint64_t lw_timing_slots = 0;
layout(constant_id = 4) const bool lw_clock_narrow = false;
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer lw_timing_lane {
  uint64_t start_inverted;
  uint64_t end;
  uint64_t flipped_start_inverted;
  uint64_t flipped_end;
};
uint lw_timing_slot_of_launch();
void lw_kernel_main();
lw_timing_lane lw_timing_lane_of_cube() {
  return lw_timing_lane(lw_timing_slots + uint64_t(lw_timing_slot_of_launch()) * 4096ul +
                        (lw_cube_index() % 32ul) * 128ul);
}
void lw_timing_fold(lw_timing_lane lane, uint64_t now, bool entry) {
  const uint64_t flipped = now ^ 0x80000000ul;
  if (entry) {
    atomicMax(lane.start_inverted, ~now);
    if (lw_clock_narrow) atomicMax(lane.flipped_start_inverted, ~flipped);
  } else {
    atomicMax(lane.end, now);
    if (lw_clock_narrow) atomicMax(lane.flipped_end, flipped);
  }
}
void main() {
  const bool first = gl_LocalInvocationIndex == 0u;
  // The entry's stamp is read now but folded with the exit's: an atomic issued before the kernel
  // may hold the first unit until the memory system answers (GLSL's atomics return a value, which
  // a driver need not drop), delaying its cube's work; after the kernel, nothing waits for it.
  const uint64_t entry = first ? clockRealtimeEXT() : 0ul;
  lw_kernel_main();
  barrier();
  if (first) {
    const uint64_t exit = clockRealtimeEXT();
    lw_timing_lane lane = lw_timing_lane_of_cube();
    lw_timing_fold(lane, entry, true);
    lw_timing_fold(lane, exit, false);
  }
}
#define main lw_kernel_main
#endif
