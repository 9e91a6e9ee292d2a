#version 450
#extension GL_GOOGLE_include_directive : require
// WORDS[i] = 0 for i < P[0]: zeroes the scatter owner scratch once, when it is allocated.
#include "workgroup.glsl"
layout(std430, binding = 0) readonly buffer Params { uint P[]; };
layout(std430, binding = 1) buffer Words { uint WORDS[]; };
void main() {
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < P[0];) {
        WORDS[i] = 0u;
        if (P[0] - i <= step) break;
        i += step;
    }
}
