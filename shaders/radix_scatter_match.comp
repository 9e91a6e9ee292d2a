#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Radix sort pass 4 (radix.glsl) on devices with subgroup ballot and arithmetic in compute shaders and
// subgroups of at least MIN_SUBGROUP invocations that divide the workgroup (radix_scatter_match; the host
// checks): moves each (key, value) pair to its place, stably, ranking them with subgroup operations instead of
// radix_scatter.comp's chunks (three workgroup barriers and two shared atomics per chunk of WORKGROUP_SIZE
// pairs). Per tile:
// 1. Subgroup s takes the tile's pairs [s * ITEMS * S, (s + 1) * ITEMS * S) (S: the subgroup size), loaded at
//    once, ITEMS per invocation: pair (s, k, lane) = s * ITEMS * S + k * S + lane.
// 2. For k = 0, 1, ...: the invocations whose pair has the same digit find each other (a ballot per digit bit);
//    a pair's rank is the count of its digit's pairs in the subgroup's earlier items (its counter) plus the
//    number of those in lanes below it; the lowest such lane adds their number to the counter.
// 3. The counters become places: digit d's pairs of subgroup s go after those of earlier subgroups, from the
//    digit's first place in the tile sorted by digit (an exclusive sum of the tile's digit counts).
// 4. The pairs go to the tile sorted by digit in shared memory (the counters' memory), then out in that order:
//    a digit's pairs of the tile to consecutive places.
// The order of a digit's pairs is that of the tile (subgroup, item, lane), whatever the scheduling.
// Variant TILE_LOCAL (the fold per bucket, dmlgpu/plans/reduction_buckets.py): each tile is sorted in its own place
// (a pair's place: the tile's first + its place in the tile sorted by digit), its digit counts come from the
// counters (no histogram pass), and TILE_DIGITS[tile * RADIX + d] = (digit d's first place in the sorted tile)
// | (its count << 16) says where each digit's pairs are.
#include "radix.glsl"
#if TILE_LOCAL
layout(std430, binding = 1) restrict readonly buffer KeysIn { uint KEYS_IN[]; };
layout(std430, binding = 2) restrict readonly buffer ValsIn { uint VALS_IN[]; };
layout(std430, binding = 3) restrict writeonly buffer KeysOut { uint KEYS_OUT[]; };
layout(std430, binding = 4) restrict writeonly buffer ValsOut { uint VALS_OUT[]; };
layout(std430, binding = 5) restrict writeonly buffer TileDigits { uint TILE_DIGITS[]; };
#define VAL_IN(i) VALS_IN[i]
#define VAL_OUT(i) VALS_OUT[i]
#elif FEW
layout(std430, binding = 1) restrict readonly buffer KeysIn { uint KEYS_IN[]; };
layout(std430, binding = 2) restrict writeonly buffer KeysOut { uint KEYS_OUT[]; };
layout(std430, binding = 3) restrict buffer Hist { uint HIST[]; };   // after radix_scan.comp
#define VAL_IN(i) KEYS_IN[PW(R_COUNT) + (i)]
#define VAL_OUT(i) KEYS_OUT[PW(R_COUNT) + (i)]
#else
layout(std430, binding = 1) restrict readonly buffer KeysIn { uint KEYS_IN[]; };
layout(std430, binding = 2) restrict readonly buffer ValsIn { uint VALS_IN[]; };
layout(std430, binding = 3) restrict writeonly buffer KeysOut { uint KEYS_OUT[]; };
layout(std430, binding = 4) restrict writeonly buffer ValsOut { uint VALS_OUT[]; };
layout(std430, binding = 5) restrict buffer Hist { uint HIST[]; };   // after radix_scan.comp
#define VAL_IN(i) VALS_IN[i]
#define VAL_OUT(i) VALS_OUT[i]
#endif
const uint RANK_WORDS = 2u * TILE;          // the sorted tile: keys, then values
#include "tile_rank.glsl"
shared uint s_base[RADIX];                  // digit's place in the output minus its first place in the tile
shared uint s_sums[MAX_SUBGROUPS];

void main() {
    uint t = gl_LocalInvocationID.x, n = PW(R_COUNT), tiles = PW(R_TILES);
    uint s = gl_SubgroupID, S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    uint me = s * S + lane;                 // this invocation's digit in step 1 (in subgroup order: full subgroups)
#if !TILE_LOCAL
    if (gl_WorkGroupID.x == 0u)
        HIST[totals_at(me)] = 0u;
#endif
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        uint first = tile * TILE, segment = first + s * ITEMS * S;
#if !TILE_LOCAL
        // 1. the tile's count of digit me and their exclusive sum over the digits (subgroup sums, then the
        // sums of the earlier subgroups)
        uint here = HIST[places_at(me, tile)], c = HIST[counts_at(me, tile)];
        uint within = subgroupInclusiveAdd(c);
        if (lane == S - 1u)
            s_sums[s] = within;
#endif
        clear_counters();
        uint keys[ITEMS], vals[ITEMS], ranks[ITEMS], digits[ITEMS];
        for (uint k = 0u; k < ITEMS; ++k) {
            uint i = segment + k * S + lane;
            keys[k] = i < n ? KEYS_IN[i] : 0u;
            vals[k] = i < n ? VAL_IN(i) : 0u;
            digits[k] = digit(keys[k]);
        }
        barrier();
#if !TILE_LOCAL
        uint start = within - c;
        for (uint w = 0u; w < s; ++w)
            start += s_sums[w];
        s_start[me] = start;
        s_base[me] = here - start;
#endif
#if TILE_LOCAL
        // 2 and 3, the tile's digit counts from the counters: digit t's count and first place in the sorted tile
        uint mine, start;
        tile_places(digits, segment, n, ranks, mine, start);
        s_base[t] = first;
        TILE_DIGITS[tile * RADIX + t] = start | (mine << 16u);
#else
        // 2. ranks within the subgroup's pairs
        subgroup_ranks(digits, segment, n, ranks);
        barrier();
        // 3. counters -> places
        counters_to_places();
        barrier();
        for (uint k = 0u; k < ITEMS; ++k)
            ranks[k] += counter(s, digits[k]);
        barrier();
#endif
        // 4. the tile sorted by digit, then out in that order
        for (uint k = 0u; k < ITEMS; ++k) {
            if (segment + k * S + lane < n) {
                s_mem[ranks[k]] = keys[k];
                s_mem[TILE + ranks[k]] = vals[k];
            }
        }
        barrier();
        for (uint k = 0u; k < ITEMS; ++k) {
            uint p = k * WORKGROUP_SIZE + t;
            if (first + p < n) {
                uint key = s_mem[p];
                uint place = s_base[digit(key)] + p;
                KEYS_OUT[place] = key;
                VAL_OUT(place) = s_mem[TILE + p];
            }
        }
        barrier();
    }
}
