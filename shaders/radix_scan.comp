#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 2 (radix.glsl): PLACES(d, tile) = the totals of the digits below d + the counts of d in the
// tiles before. A workgroup takes PW(R_SCAN_DIGITS) consecutive digits, whose rows of counts are consecutive:
// several short rows in one step of SCAN_BLOCK counts (SCAN_ITEMS consecutive ones per invocation), or one
// long row in several steps, each from the sum of those before. The prefix sum runs over the whole step;
// a row's own prefix is that minus the prefix at its first count. No workgroup waits for another.
#include "radix.glsl"
layout(std430, binding = 1) restrict buffer Hist { uint HIST[]; };
shared uint s_before[RADIX];        // digit's first place: the totals of the digits below it
shared uint s_row[RADIX];           // the step's prefix sum at the first count of each of its rows
void main() {
    uint t = gl_LocalInvocationID.x, tiles = PW(R_TILES), digits = PW(R_SCAN_DIGITS), total;
    uint mine = HIST[totals_at(t)];
    s_before[t] = scan_inclusive(mine, total) - mine;
    barrier();
    for (uint g = gl_WorkGroupID.x * digits; g < RADIX; g += gl_NumWorkGroups.x * digits) {
        uint base = counts_at(g, 0u), entries = digits * tiles, running = 0u;
        for (uint step = 0u; step < entries; step += SCAN_BLOCK) {
            uint first = step + t * SCAN_ITEMS, sum = 0u;
            for (uint k = 0u; k < SCAN_ITEMS; ++k)
                sum += first + k < entries ? HIST[base + first + k] : 0u;
            uint prefix = running + scan_inclusive(sum, total) - sum;
            for (uint k = 0u, p = prefix; k < SCAN_ITEMS && first + k < entries; ++k) {
                if ((first + k) % tiles == 0u)
                    s_row[(first + k) / tiles] = p;
                p += HIST[base + first + k];
            }
            barrier();
            for (uint k = 0u; k < SCAN_ITEMS && first + k < entries; ++k) {
                uint row = (first + k) / tiles;
                HIST[places_at(g, 0u) + first + k] = s_before[g + row] + prefix - s_row[row];
                prefix += HIST[base + first + k];
            }
            barrier();
            running += total;
        }
    }
}
