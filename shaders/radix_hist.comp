#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 1 (radix.glsl): per tile, the count of each digit (COUNTS); a workgroup adds its tiles' counts
// to the digit's total (TOTALS) once.
#include "radix.glsl"
layout(std430, binding = 1) restrict readonly buffer Keys { uint KEYS[]; };
layout(std430, binding = 2) restrict buffer Hist { uint HIST[]; };
shared uint s_count[RADIX];
void main() {
    uint t = gl_LocalInvocationID.x, n = PW(R_COUNT), tiles = PW(R_TILES), total = 0u;
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        s_count[t] = 0u;
        barrier();
        uint end = min(n, (tile + 1u) * TILE);
        for (uint i = tile * TILE + t; i < end; i += WORKGROUP_SIZE)
            atomicAdd(s_count[digit(KEYS[i])], 1u);
        barrier();
        uint c = s_count[t];                   // thread t alone reads and next zeroes count t
        HIST[counts_at(t, tile)] = c;
        total += c;
    }
    if (total != 0u)      // the workgroup's tiles at once
        atomicAdd(HIST[totals_at(t)], total);
}
