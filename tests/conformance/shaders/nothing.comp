#version 460
#extension GL_GOOGLE_include_directive : require
#include "launchwatch.glsl"
// conformance_kernels.hpp's nothing: an empty C++ struct is one byte, pushed as one word.
struct lw_args { uint unused; };
LW_BIND_ARGS
void main() {}
