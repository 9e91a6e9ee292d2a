// The passes of the stable LSD radix sort of (key, value) pairs (dmlgpu/reduction.py): a reduce-then-scan
// sort that needs no forward progress between workgroups. Each pass sorts by one digit of RADIX_BITS bits:
//   radix_hist.comp     workgroup per tile: the tile's digit counts, HIST[digit * tiles + tile]
//   radix_scan.comp     workgroup per digit: that digit's row of HIST becomes its exclusive prefix over the
//                       tiles, and HIST[RADIX * tiles + digit] the digit's total
//   radix_scatter.comp  workgroup per tile: each pair moves to (start of its digit) + (its digit's count in
//                       earlier tiles) + (its rank among the pairs of its digit earlier in the tile)
// A tile is ITEMS chunks of WORKGROUP_SIZE consecutive pairs. Parameters: P[R_COUNT] pairs, digit
// (key >> P[R_SHIFT]) & P[R_MASK], P[R_TILES] tiles.
#include "workgroup.glsl"
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
const uint R_COUNT = 0u, R_SHIFT = 1u, R_MASK = 2u, R_TILES = 3u;
#define RADIX_BITS 8
const uint RADIX = 1u << RADIX_BITS;
#if WORKGROUP_SIZE != 256
#error "the radix kernels give each invocation one digit: WORKGROUP_SIZE must be RADIX (256)"
#endif
const uint ITEMS = 16u;
const uint TILE = WORKGROUP_SIZE * ITEMS;

uint digit(uint key) { return (key >> P[R_SHIFT]) & P[R_MASK]; }

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
