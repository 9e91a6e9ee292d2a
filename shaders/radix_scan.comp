#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 2 (radix.glsl): PLACES(d, tile) = the totals of the digits below d + the counts of d in the
// tiles before. A workgroup takes PW(R_SCAN_DIGITS) consecutive digits, whose rows of counts are consecutive:
// several short rows in one step of SCAN_BLOCK counts, or one long row in several steps, each from the sum of
// those before. A step's counts go through shared memory (loaded and stored coalesced), where each invocation
// sums SCAN_ITEMS consecutive ones; the prefix sum runs over the whole step, and a row's own prefix is that
// minus the prefix at its first count. No workgroup waits for another.
#include "radix.glsl"
layout(std430, binding = 1) restrict buffer Hist { uint HIST[]; };
shared uint s_before[RADIX];        // digit's first place: the totals of the digits below it
shared uint s_row[RADIX];           // the step's prefix sum at the first count of each of its rows
shared uint s_step[SCAN_BLOCK];     // the step's counts, then their prefix sums
void main() {
    uint t = gl_LocalInvocationID.x, tiles = PW(R_TILES), digits = PW(R_SCAN_DIGITS), total;
    uint mine = HIST[totals_at(t)];
    s_before[t] = scan_inclusive(mine, total) - mine;
    barrier();
    for (uint g = gl_WorkGroupID.x * digits; g < RADIX; g += gl_NumWorkGroups.x * digits) {
        uint base = counts_at(g, 0u), entries = digits * tiles, running = 0u;
        for (uint step = 0u; step < entries; step += SCAN_BLOCK) {
            for (uint j = t; j < SCAN_BLOCK; j += WORKGROUP_SIZE)
                s_step[j] = step + j < entries ? HIST[base + step + j] : 0u;
            barrier();
            uint first = t * SCAN_ITEMS, sum = 0u;
            for (uint k = 0u; k < SCAN_ITEMS; ++k)
                sum += s_step[first + k];
            uint p = running + scan_inclusive(sum, total) - sum;
            for (uint k = 0u; k < SCAN_ITEMS; ++k) {
                uint c = s_step[first + k];
                if ((step + first + k) % tiles == 0u && step + first + k < entries)
                    s_row[(step + first + k) / tiles] = p;
                s_step[first + k] = p;
                p += c;
            }
            barrier();
            for (uint j = t; j < SCAN_BLOCK && step + j < entries; j += WORKGROUP_SIZE) {
                uint row = (step + j) / tiles;
                HIST[places_at(g, 0u) + step + j] = s_before[g + row] + s_step[j] - s_row[row];
            }
            barrier();
            running += total;
        }
    }
}
