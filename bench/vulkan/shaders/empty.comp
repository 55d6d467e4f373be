#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// vulkan_launch_bench.cpp's empty kernel: what a launch costs with no work in it.
struct lw_args { uint unused; };
LW_BIND_ARGS
void main() {}
