// The passes of the stable LSD radix sort of (key, value) pairs (dmlgpu/reduction.py): a reduce-then-scan
// sort that needs no forward progress between workgroups. Each pass sorts by one digit of RADIX_BITS bits:
//   radix_hist.comp     workgroup per tile: the tile's digit counts, HIST[digit * tiles + tile]
//   radix_reduce.comp   workgroup per block of SCAN_BLOCK counts: their sum, after the counts (skipped
//                       when there is one block)
//   radix_scan.comp     workgroup per block: the exclusive prefix sum of all the counts, in place (the
//                       block's start: the sum of the earlier blocks' sums); HIST[digit * tiles + tile]
//                       becomes the place of the tile's first pair of that digit: all the pairs of smaller
//                       digits, and those of its digit in earlier tiles, come before
//   radix_scatter.comp  workgroup per tile: each pair moves to that place + its rank among the pairs of its
//                       digit earlier in the tile
// A tile is ITEMS chunks of WORKGROUP_SIZE consecutive pairs. Parameters: PW(R_COUNT) pairs, digit
// (key >> PW(R_SHIFT)) & PW(R_MASK), PW(R_TILES) tiles, PW(R_BLOCKS) blocks of counts.
#include "workgroup.glsl"
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
#define PW(i) P[i]      // parameter word i (bindings.glsl)
const uint R_COUNT = 0u;
const uint R_SHIFT = 1u;
const uint R_MASK = 2u;
const uint R_TILES = 3u;
const uint R_BLOCKS = 4u;
// RADIX_BITS, RADIX_ITEMS (pairs per invocation in a tile), RADIX_SCAN_ITEMS (counts per invocation in the
// scan passes): defines from the variant table (dmlgpu/kernels.py).
const uint RADIX = 1u << RADIX_BITS;
#if WORKGROUP_SIZE != (1 << RADIX_BITS)
#error "the radix kernels give each invocation one digit: WORKGROUP_SIZE must be RADIX"
#endif
const uint ITEMS = RADIX_ITEMS;
const uint TILE = WORKGROUP_SIZE * ITEMS;
const uint SCAN_ITEMS = RADIX_SCAN_ITEMS;
const uint SCAN_BLOCK = WORKGROUP_SIZE * SCAN_ITEMS;

uint digit(uint key) { return (key >> PW(R_SHIFT)) & PW(R_MASK); }

// The counts of invocation t of a block: SCAN_ITEMS consecutive ones, from here (those at or past
// RADIX * tiles do not exist).
uint scan_first(uint block) { return block * SCAN_BLOCK + gl_LocalInvocationID.x * SCAN_ITEMS; }

shared uint s_scan[WORKGROUP_SIZE];

// Inclusive prefix sum of v over the workgroup's invocations (called by all of them, in uniform control
// flow); total: the sum over all of them.
uint scan_inclusive(uint v, out uint total) {
    uint t = gl_LocalInvocationID.x;
    s_scan[t] = v;
    barrier();
    for (uint off = 1u; off < WORKGROUP_SIZE; off <<= 1u) {
        uint x = t >= off ? s_scan[t - off] : 0u;
        barrier();
        s_scan[t] += x;
        barrier();
    }
    uint r = s_scan[t];
    total = s_scan[WORKGROUP_SIZE - 1u];
    barrier();
    return r;
}
