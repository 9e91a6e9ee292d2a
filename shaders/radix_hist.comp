#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 1 (radix.glsl): per tile, the count of each digit: HIST[digit * tiles + tile].
#include "radix.glsl"
layout(std430, binding = 1) restrict readonly buffer Keys { uint KEYS[]; };
layout(std430, binding = 2) restrict writeonly buffer Hist { uint HIST[]; };
shared uint s_count[RADIX];
void main() {
    uint t = gl_LocalInvocationID.x, n = PW(R_COUNT), tiles = PW(R_TILES);
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        s_count[t] = 0u;
        barrier();
        uint end = min(n, (tile + 1u) * TILE);
        for (uint i = tile * TILE + t; i < end; i += WORKGROUP_SIZE)
            atomicAdd(s_count[digit(KEYS[i])], 1u);
        barrier();
        HIST[t * tiles + tile] = s_count[t];   // thread t alone reads and next zeroes count t
    }
}
