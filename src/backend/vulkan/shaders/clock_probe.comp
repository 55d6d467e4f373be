#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// The shader clock's calibration probe (backend/vulkan/shader_clock.cpp): one unit reads the device
// clock at its entry and its exit, between two timestamp queries that place it on the host.
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer lw_probe_readings {
  uint64_t entry;
  uint64_t exit;
};
struct lw_args { lw_probe_readings readings; };
LW_BIND_ARGS
void main() {
  const uint64_t entry = clockRealtimeEXT();
  kernel.readings.entry = entry;
  kernel.readings.exit = clockRealtimeEXT();
}
