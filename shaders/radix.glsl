// The passes of the stable LSD radix sort of (key, value) pairs (dmlgpu/plans/reduction.py): a reduce-then-scan
// sort that needs no forward progress between workgroups. Each pass sorts by one digit of RADIX_BITS bits, with
// three dispatches:
//   radix_hist.comp     workgroup per tile: the tile's digit counts (COUNTS), and each digit's total over the
//                       tiles (TOTALS, by atomic adds: integer sums, the same in any order)
//   radix_scan.comp     workgroup per PW(R_SCAN_DIGITS) digits: PLACES(digit, tile), the place of the tile's
//                       first pair of that digit: all the pairs of smaller digits (the totals before it) and
//                       those of its digit in earlier tiles (the exclusive prefix sum of its row of counts)
//                       come before
//   radix_scatter*.comp workgroup per tile: each pair moves to that place + its rank among the pairs of its
//                       digit earlier in the tile (radix_scatter.comp, radix_scatter_match.comp)
// HIST, one buffer: the totals (one per digit), the counts (digit-major: digit * tiles + tile), the places (the
// same order).
// It is zeroed scratch (Device.zeroed) whose totals stay zero between sorts: the scatter's workgroup 0 clears
// them (the scan has read them), so that the next pass's histogram adds into zeros. The counts and places are
// written before they are read and left as they are.
// A tile is ITEMS chunks of WORKGROUP_SIZE consecutive pairs. Parameters: PW(R_COUNT) pairs, digit
// (key >> PW(R_SHIFT)) & PW(R_MASK), PW(R_TILES) tiles, PW(R_SCAN_DIGITS) digits per scan workgroup.
// A kernel with parameters of its own (reduce_keys.comp's FIRST_HIST) defines R_BASE, the first of these words, and
// declares the parameters itself.
#include "workgroup.glsl"
#ifndef R_BASE
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
#define PW(i) P[i]      // parameter word i (bindings.glsl)
#define R_BASE 0u
#endif
const uint R_COUNT = R_BASE;
const uint R_SHIFT = R_BASE + 1u;
const uint R_MASK = R_BASE + 2u;
const uint R_TILES = R_BASE + 3u;
const uint R_SCAN_DIGITS = R_BASE + 4u;     // radix_scan.comp: digits (rows of counts) per workgroup
// RADIX_BITS, RADIX_ITEMS (pairs per invocation in a tile), RADIX_SCAN_ITEMS (counts per invocation in a step
// of the scan): from the variant table (dmlgpu/kernels/table.py).
// RADIX_BITS is a specialization constant (kernels.SPEC_CONSTANTS); the radix kernels give each invocation one
// digit: WORKGROUP_SIZE == RADIX (kernels.Geometry).
layout(constant_id = RADIX_BITS_ID) const uint RADIX_BITS = 0u;
const uint RADIX = 1u << RADIX_BITS;
const uint ITEMS = RADIX_ITEMS;
const uint TILE = WORKGROUP_SIZE * ITEMS;
const uint SCAN_ITEMS = RADIX_SCAN_ITEMS;
const uint SCAN_BLOCK = WORKGROUP_SIZE * SCAN_ITEMS;

uint digit(uint key) { return (key >> PW(R_SHIFT)) & PW(R_MASK); }

// Where HIST holds a digit's count and place in a tile, and its total.
uint totals_at(uint d) { return d; }
uint counts_at(uint d, uint tile) { return RADIX + d * PW(R_TILES) + tile; }
uint places_at(uint d, uint tile) { return RADIX + (RADIX + d) * PW(R_TILES) + tile; }

shared uint s_scan[WORKGROUP_SIZE];
const uint SCAN_GROUP = 16u;       // scan_inclusive: invocations whose values one invocation sums in turn
shared uint s_groups[WORKGROUP_SIZE / SCAN_GROUP];

// Inclusive prefix sum of v over the workgroup's invocations (called by all of them, in uniform control
// flow); total: the sum over all of them. Four barriers: each group of SCAN_GROUP values is summed in turn by
// its first invocation, the group sums by invocation 0 (fewer barriers than a tree of steps: they are what
// costs most on CPU devices).
uint scan_inclusive(uint v, out uint total) {
    uint t = gl_LocalInvocationID.x;
    s_scan[t] = v;
    barrier();
    if (t % SCAN_GROUP == 0u) {
        uint run = 0u;
        for (uint k = 0u; k < SCAN_GROUP; ++k) {
            run += s_scan[t + k];
            s_scan[t + k] = run;
        }
    }
    barrier();
    if (t == 0u) {
        uint run = 0u;
        for (uint g = 0u; g < WORKGROUP_SIZE / SCAN_GROUP; ++g) {
            run += s_scan[g * SCAN_GROUP + SCAN_GROUP - 1u];
            s_groups[g] = run;
        }
    }
    barrier();
    uint group = t / SCAN_GROUP;
    uint r = s_scan[t] + (group > 0u ? s_groups[group - 1u] : 0u);
    total = s_groups[WORKGROUP_SIZE / SCAN_GROUP - 1u];
    barrier();
    return r;
}

#ifdef HIST_KEY
// The histogram pass (radix_hist.comp; reduce_keys.comp's FIRST_HIST makes the keys in it): HIST_KEY(i), pair i's key;
// HIST declared before this include. Workgroups take tiles in turn, each tile's digit counts go to COUNTS, and
// each workgroup adds its tiles' totals once.
shared uint s_count[RADIX];
void histogram() {
    uint t = gl_LocalInvocationID.x, n = PW(R_COUNT), tiles = PW(R_TILES), total = 0u;
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        s_count[t] = 0u;
        barrier();
        uint end = min(n, (tile + 1u) * TILE);
        for (uint i = tile * TILE + t; i < end; i += WORKGROUP_SIZE)
            atomicAdd(s_count[digit(HIST_KEY(i))], 1u);
        barrier();
        uint c = s_count[t];                   // thread t alone reads and next zeroes count t
        HIST[counts_at(t, tile)] = c;
        total += c;
    }
    if (total != 0u)      // the workgroup's tiles at once
        atomicAdd(HIST[totals_at(t)], total);
}
#endif
