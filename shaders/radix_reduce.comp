#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 2 (radix.glsl): the sum of each block of SCAN_BLOCK tile counts, stored after the counts:
// HIST[RADIX * tiles + block].
#include "radix.glsl"
layout(std430, binding = 1) restrict buffer Hist { uint HIST[]; };
void main() {
    uint entries = RADIX * PW(R_TILES);
    for (uint block = gl_WorkGroupID.x; block < PW(R_BLOCKS); block += gl_NumWorkGroups.x) {
        uint first = scan_first(block), sum = 0u;
        for (uint k = 0u; k < SCAN_ITEMS; ++k)
            sum += first + k < entries ? HIST[first + k] : 0u;
        uint total;
        scan_inclusive(sum, total);
        if (gl_LocalInvocationID.x == 0u)
            HIST[entries + block] = total;
    }
}
