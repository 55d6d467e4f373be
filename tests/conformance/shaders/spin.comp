#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// conformance_kernels.hpp's spin, on the device's nanosecond clock.
//
// Written for lavapipe's limits: it ends a shader's loops after 65535 iterations in all, and merges
// repeated clock reads, so each iteration first does 128 dependent 64-bit divisions (about 8 us
// there; spins up to about half a second, enough for every test) and then reads the clock once.
// Its clock is 32 bits wide there, so elapsed time is taken modulo 2^32 ns (4.3 s).
struct lw_args { uint64_t nanoseconds; lw_span_i32 done; };
LW_BIND_ARGS
#define LW_STEP x = x * 6364136223846793005ul / d + 1442695040888963407ul;
#define LW_STEP8 LW_STEP LW_STEP LW_STEP LW_STEP LW_STEP LW_STEP LW_STEP LW_STEP
#define LW_STEP128 LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8 \
  LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8 LW_STEP8
void main() {
  const uint start = uint(lw_clock_ns());
  const uint64_t d = (kernel.nanoseconds >> 7) | 3ul;
  uint64_t x = uint64_t(start);
  uint now = start;
  while (uint64_t(now - start) < kernel.nanoseconds) {
    LW_STEP128
    now = uint(lw_clock_ns());
  }
  // x == 1 never holds in practice: it keeps the divisions from being optimised away.
  if (lw_absolute_pos() == 0 && kernel.done.size != 0) kernel.done.data.at[0] = x == 1ul ? 2 : 1;
}
