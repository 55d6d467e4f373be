#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// vulkan_timing_bench.cpp's spin kernel: every unit runs until `nanoseconds` have passed on the
// device clock, doing `steps` dependent 64-bit divisions between reads (lavapipe merges clock reads
// that follow each other closely; a GPU wants 1, so the spin ends within a few nanoseconds of its
// mark), then the first unit writes 1.
struct lw_args { uint64_t nanoseconds; uint steps; lw_span_i32 done; };
LW_BIND_ARGS
void main() {
  const uint64_t start = lw_clock_ns();
  const uint64_t d = (kernel.nanoseconds >> 7) | 3ul;
  uint64_t x = start;
  uint64_t now = start;
  // Elapsed time modulo 2^32 ns: lavapipe's clock keeps only its low 32 bits.
  while (uint64_t(uint(now - start)) < kernel.nanoseconds) {
    for (uint s = 0u; s < kernel.steps; ++s) {
      x = x * 6364136223846793005ul / d + 1442695040888963407ul;
    }
    now = lw_clock_ns();
  }
  // x == 1 never holds in practice: it keeps the divisions from being optimised away.
  if (lw_absolute_pos() == 0 && kernel.done.size != 0) kernel.done.data.at[0] = x == 1ul ? 2 : 1;
}
