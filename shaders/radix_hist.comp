#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 1 (radix.glsl): per tile, the count of each digit (COUNTS); a workgroup adds its tiles' counts
// to the digit's total (TOTALS) once (radix.glsl's histogram()).
layout(std430, binding = 1) restrict readonly buffer Keys { uint KEYS[]; };
layout(std430, binding = 2) restrict buffer Hist { uint HIST[]; };
#define HIST_KEY(i) KEYS[i]
#include "radix.glsl"
void main() {
    histogram();
}
