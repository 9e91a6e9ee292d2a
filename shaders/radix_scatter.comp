#version 450
#extension GL_GOOGLE_include_directive : require
// Radix sort pass 4 (radix.glsl): moves each (key, value) pair to its place, stably. A tile's chunks go in
// order; within a chunk, an invocation's rank among those of its digit comes from a bit mask per digit
// (bit t: invocation t has that digit): the population count of the bits below its own.
#include "radix.glsl"
#if FEW
// FEW (devices that bind at most 4 storage buffers): each pair's value follows the PW(R_COUNT) keys in the
// keys' buffer (reduce_keys.comp's FEW). Bindings: 0 params, 1 keys in, 2 keys out, 3 counts.
layout(std430, binding = 1) restrict readonly buffer KeysIn { uint KEYS_IN[]; };
layout(std430, binding = 2) restrict writeonly buffer KeysOut { uint KEYS_OUT[]; };
layout(std430, binding = 3) restrict readonly buffer Hist { uint HIST[]; };   // after radix_scan.comp
#define VAL_IN(i) KEYS_IN[PW(R_COUNT) + (i)]
#define VAL_OUT(i) KEYS_OUT[PW(R_COUNT) + (i)]
#else
layout(std430, binding = 1) restrict readonly buffer KeysIn { uint KEYS_IN[]; };
layout(std430, binding = 2) restrict readonly buffer ValsIn { uint VALS_IN[]; };
layout(std430, binding = 3) restrict writeonly buffer KeysOut { uint KEYS_OUT[]; };
layout(std430, binding = 4) restrict writeonly buffer ValsOut { uint VALS_OUT[]; };
layout(std430, binding = 5) restrict readonly buffer Hist { uint HIST[]; };   // after radix_scan.comp
#define VAL_IN(i) VALS_IN[i]
#define VAL_OUT(i) VALS_OUT[i]
#endif
const uint MASK_WORDS = WORKGROUP_SIZE / 32u;
shared uint s_next[RADIX];                  // next free place of each digit in the output
shared uint s_count[RADIX];                 // pairs of each digit in the chunk
shared uint s_mask[RADIX * MASK_WORDS];     // per digit: the invocations of the chunk that have it
void main() {
    uint t = gl_LocalInvocationID.x, n = PW(R_COUNT), tiles = PW(R_TILES);
    uint word = t / 32u, bit = 1u << (t & 31u);
    for (uint w = 0u; w < MASK_WORDS; ++w)
        s_mask[t * MASK_WORDS + w] = 0u;
    s_count[t] = 0u;
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        s_next[t] = HIST[t * tiles + tile];
        for (uint chunk = tile * TILE; chunk < min(n, (tile + 1u) * TILE); chunk += WORKGROUP_SIZE) {
            barrier();
            uint i = chunk + t, key = 0u, d = 0u;
            if (i < n) {
                key = KEYS_IN[i];
                d = digit(key);
                atomicOr(s_mask[d * MASK_WORDS + word], bit);
                atomicAdd(s_count[d], 1u);
            }
            barrier();
            if (i < n) {
                uint rank = bitCount(s_mask[d * MASK_WORDS + word] & (bit - 1u));
                for (uint w = 0u; w < word; ++w)
                    rank += bitCount(s_mask[d * MASK_WORDS + w]);
                uint place = s_next[d] + rank;
                KEYS_OUT[place] = key;
                VAL_OUT(place) = VAL_IN(i);
            }
            barrier();
            // Ready for the next chunk (read there after its first barrier): digit t's places move on by its
            // count, and each invocation clears the mask word it set (those that share it write the same 0).
            s_next[t] += s_count[t];
            s_count[t] = 0u;
            if (i < n)
                s_mask[d * MASK_WORDS + word] = 0u;
        }
    }
}
