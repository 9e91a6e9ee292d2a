#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 4 (radix.glsl): moves each (key, value) pair to its place, stably. A tile's chunks go in
// order; within a chunk, an invocation's rank among those of its digit comes from a bit mask per digit
// (bit t: invocation t has that digit): the population count of the bits below its own.
// LOCAL (radix_scatter_local: devices with the shared memory it declares): the tile's pairs are loaded at once
// (ITEMS independent loads per invocation), ranked so into the tile sorted by digit in shared memory, then
// written out in that order, a digit's pairs of the tile to consecutive places; without LOCAL each pair is
// loaded in its chunk and stored to its place there.
#include "radix.glsl"
#if FEW
// FEW (devices that bind at most 4 storage buffers): each pair's value follows the PW(R_COUNT) keys in the
// keys' buffer (reduce_keys.comp's FEW). Bindings: 0 params, 1 keys in, 2 keys out, 3 counts.
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
const uint MASK_WORDS = WORKGROUP_SIZE / 32u;
shared uint s_next[RADIX];                  // next free place of each digit (LOCAL: in the sorted tile)
shared uint s_count[RADIX];                 // pairs of each digit in the chunk
shared uint s_mask[MASK_WORDS * RADIX];     // word w of digit d at w * RADIX + d: the invocations of the
                                            // chunk that have it (digit-minor: few bank conflicts)
#if LOCAL
shared uint s_key[TILE];                    // the tile sorted by digit
shared uint s_val[TILE];
shared uint s_base[RADIX];                  // digit's place in the output minus its first place in the tile
#endif
void main() {
    uint t = gl_LocalInvocationID.x, n = PW(R_COUNT), tiles = PW(R_TILES);
    uint word = t / 32u, bit = 1u << (t & 31u);
    for (uint w = 0u; w < MASK_WORDS; ++w)
        s_mask[w * RADIX + t] = 0u;
    s_count[t] = 0u;
    if (gl_WorkGroupID.x == 0u)
        HIST[totals_at(t)] = 0u;
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        uint first = tile * TILE, here = HIST[places_at(t, tile)];
#if LOCAL
        uint c = HIST[counts_at(t, tile)];
        uint total, start = scan_inclusive(c, total) - c;    // digit t's first place in the sorted tile
        s_next[t] = start;
        s_base[t] = here - start;
        uint keys[ITEMS], vals[ITEMS];
        for (uint k = 0u; k < ITEMS; ++k) {
            uint i = first + k * WORKGROUP_SIZE + t;
            keys[k] = i < n ? KEYS_IN[i] : 0u;
            vals[k] = i < n ? VAL_IN(i) : 0u;
        }
#else
        s_next[t] = here;
#endif
        for (uint k = 0u; k < ITEMS; ++k) {
            barrier();
            uint i = first + k * WORKGROUP_SIZE + t, d = 0u;
#if LOCAL
            uint key = keys[k];
#else
            uint key = i < n ? KEYS_IN[i] : 0u;
#endif
            if (i < n) {
                d = digit(key);
                atomicOr(s_mask[word * RADIX + d], bit);
                atomicAdd(s_count[d], 1u);
            }
            barrier();
            if (i < n) {
                uint rank = bitCount(s_mask[word * RADIX + d] & (bit - 1u));
                for (uint w = 0u; w < word; ++w)
                    rank += bitCount(s_mask[w * RADIX + d]);
                uint place = s_next[d] + rank;
#if LOCAL
                s_key[place] = key;
                s_val[place] = vals[k];
#else
                KEYS_OUT[place] = key;
                VAL_OUT(place) = VAL_IN(i);
#endif
            }
            barrier();
            // Ready for the next chunk (read there after its first barrier): digit t's places move on by its
            // count, and each invocation clears the mask word it set (those that share it write the same 0).
            s_next[t] += s_count[t];
            s_count[t] = 0u;
            if (i < n)
                s_mask[word * RADIX + d] = 0u;
        }
#if LOCAL
        barrier();
        for (uint k = 0u; k < ITEMS; ++k) {
            uint p = k * WORKGROUP_SIZE + t;
            if (first + p < n) {
                uint key = s_key[p];
                uint place = s_base[digit(key)] + p;
                KEYS_OUT[place] = key;
                VAL_OUT(place) = s_val[p];
            }
        }
#endif
    }
}
