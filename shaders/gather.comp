#version 450
#extension GL_GOOGLE_include_directive : require
// dense[i] = data[map(i)]: every gather, and the strided copy (tuple size 0).
// Each thread takes ILP iterations per round (i, i + step, ...), loading all of them before storing any,
// so that several memory accesses are in flight; the iterations of one round stay coalesced across threads.
#include "units.glsl"
#include "bindings.glsl"
layout(std430, binding = 2) restrict readonly buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) restrict buffer Dense { UNIT_T DENSE[]; };
#include "index_map.glsl"

const uint ILP = 4u;  // dmlgpu/kernels.py ITERATIONS_PER_THREAD

#if UNIT < 4
// Word mode (flag bit 1): iteration w assembles word w of a packed dense tensor from its 4 / UNIT units
// and stores it whole, no atomics. A last, partial word keeps its other bytes.
uint load_word(uint w) {
    const uint per_word = 4u / UNIT;
    uint first = w * per_word;
    uint n = min(per_word, P[P_UNITS] - first);
    uint word = n == per_word ? 0u : DENSE[w];
    for (uint j = 0u; j < per_word; ++j) {
        if (j < n) {
            uint shift = j * UNIT * 8u;
            word = (word & ~(UNIT_MASK << shift)) | (LOAD_UNIT(DATA, map_offsets(first + j).data) << shift);
        }
    }
    return word;
}
#endif

void main() {
    uint total = P[P_TOTAL];
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#if UNIT < 4
    bool words = (P[P_FLAGS] & 2u) != 0u;
#endif
    for (uint base = gl_GlobalInvocationID.x; base < total;) {
        uint n = min(ILP, (total - base - 1u) / step + 1u);  // iterations of this round below total
        UNIT_T value[ILP];
        uint at[ILP];
        for (uint j = 0u; j < ILP; ++j) {
            if (j < n) {
                uint i = base + j * step;
#if UNIT < 4
                if (words) {
                    at[j] = i;
                    value[j] = load_word(i);
                    continue;
                }
#endif
                Offsets o = map_offsets(i);
                at[j] = o.dense;
                value[j] = LOAD_UNIT(DATA, o.data);
            }
        }
        for (uint j = 0u; j < ILP; ++j) {
            if (j < n) {
#if UNIT < 4
                if (words) {
                    DENSE[at[j]] = value[j];
                    continue;
                }
#endif
                STORE_UNIT(DENSE, at[j], value[j]);
            }
        }
        if (total - base <= ILP * step) break;
        base += ILP * step;
    }
}
