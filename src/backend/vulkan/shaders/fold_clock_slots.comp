#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// Folds the timing slots of a batch's timed launches (backend/vulkan/clock_slots.hpp), in the
// batch's own command buffer after its last launch: one unit per launch takes the earliest entry
// and the latest exit over the slot's 32 lanes, writes them where the host reads the batch back,
// and zeroes the lanes for the slot's next launch.
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer lw_fold_lane {
  uint64_t start_inverted;
  uint64_t end;
  uint64_t flipped_start_inverted;
  uint64_t flipped_end;
};
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer lw_fold_slots { uint at[]; };
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer lw_fold_windows {
  uint64_t at[];
};
// lanes: the first slot's address; slots: each launch's slot; windows: each launch's
// {start inverted (0: no cube stamped), end}; narrow: the clock keeps only its low 32 bits.
struct lw_args {
  uint64_t lanes;
  lw_fold_slots slots;
  lw_fold_windows windows;
  uint count;
  uint narrow;
};
LW_BIND_ARGS
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= kernel.count) return;
  const uint64_t slot = kernel.lanes + uint64_t(kernel.slots.at[i]) * 4096ul;
  uint64_t start_inverted = 0ul;
  uint64_t end = 0ul;
  uint64_t flipped_start_inverted = 0ul;
  uint64_t flipped_end = 0ul;
  for (uint lane = 0u; lane < 32u; ++lane) {
    lw_fold_lane at = lw_fold_lane(slot + uint64_t(lane) * 128ul);
    start_inverted = max(start_inverted, at.start_inverted);
    end = max(end, at.end);
    flipped_start_inverted = max(flipped_start_inverted, at.flipped_start_inverted);
    flipped_end = max(flipped_end, at.flipped_end);
    at.start_inverted = 0ul;
    at.end = 0ul;
    at.flipped_start_inverted = 0ul;
    at.flipped_end = 0ul;
  }
  // On a narrow clock, of the two forms, the one with the shorter span did not cross the wrap (the
  // other's span reads as nearly 2^32, or, as unsigned, as a huge number).
  if (kernel.narrow != 0u && start_inverted != 0ul &&
      flipped_end - ~flipped_start_inverted < end - ~start_inverted) {
    start_inverted = ~(~flipped_start_inverted ^ 0x80000000ul);
    end = flipped_end ^ 0x80000000ul;
  }
  kernel.windows.at[2u * i] = start_inverted;
  kernel.windows.at[2u * i + 1u] = end;
}
