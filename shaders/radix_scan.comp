#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 3 (radix.glsl): the exclusive prefix sum of the tile counts HIST[digit * tiles + tile],
// in place. Each block of SCAN_BLOCK counts starts from the sum of the earlier blocks' sums
// (radix_reduce.comp; with one block there are none): no workgroup waits for another.
#include "radix.glsl"
layout(std430, binding = 1) restrict buffer Hist { uint HIST[]; };
void main() {
    uint t = gl_LocalInvocationID.x, entries = RADIX * PW(R_TILES);
    for (uint block = gl_WorkGroupID.x; block < PW(R_BLOCKS); block += gl_NumWorkGroups.x) {
        uint before = 0u, total;
        for (uint b = t; b < block; b += WORKGROUP_SIZE)
            before += HIST[entries + b];
        uint carry = 0u;
        scan_inclusive(before, carry);              // the earlier blocks' counts
        uint first = scan_first(block), sum = 0u;
        for (uint k = 0u; k < SCAN_ITEMS; ++k)
            sum += first + k < entries ? HIST[first + k] : 0u;
        uint running = carry + scan_inclusive(sum, total) - sum;
        for (uint k = 0u; k < SCAN_ITEMS && first + k < entries; ++k) {
            uint x = HIST[first + k];
            HIST[first + k] = running;
            running += x;
        }
    }
}
