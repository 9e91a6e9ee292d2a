#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 2 (radix.glsl): per digit, the exclusive prefix sum of its tile counts, in place, and
// its total in HIST[RADIX * tiles + digit]. One workgroup per digit (grid-stride), chunks of
// WORKGROUP_SIZE tiles with a carry: no workgroup waits for another.
#include "radix.glsl"
layout(std430, binding = 1) restrict buffer Hist { uint HIST[]; };
void main() {
    uint t = gl_LocalInvocationID.x, tiles = P[R_TILES];
    for (uint d = gl_WorkGroupID.x; d < RADIX; d += gl_NumWorkGroups.x) {
        uint carry = 0u;
        for (uint base = 0u; base < tiles; base += WORKGROUP_SIZE) {
            bool inside = base + t < tiles;
            uint at = d * tiles + base + t;
            uint v = inside ? HIST[at] : 0u;
            uint total;
            uint incl = scan_inclusive(v, total);
            if (inside)
                HIST[at] = carry + incl - v;
            carry += total;
        }
        if (t == 0u)
            HIST[RADIX * tiles + d] = carry;
    }
}
