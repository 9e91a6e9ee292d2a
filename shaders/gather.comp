#version 450
#extension GL_GOOGLE_include_directive : require
// dense[i] = data[map(i)]: every gather, and the strided copy (tuple size 0).
// (Taking 4 grid-strided iterations per thread, loads before stores, measured slower on an H200 for
// every workload of the benchmark, scattered single elements included: one iteration per thread it is.)
#include "units.glsl"
#include "bindings.glsl"
layout(std430, binding = 2) restrict readonly buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) restrict buffer Dense { UNIT_T DENSE[]; };
#include "index_map.glsl"

#if UNIT < 4
// Word mode (FLAG_WORDS): iteration w assembles word w of a packed dense tensor from its 4 / UNIT units
// and stores it whole, no atomics. A last, partial word keeps its other bytes.
void process_word(OFF_T w) {
    const uint per_word = 4u / UNIT;
    OFF_T first = w * per_word;
    uint n = uint(min(OFF_T(per_word), P[P_UNITS] - first));
    uint word = n == per_word ? 0u : WORD_AT(DENSE, w);
    for (uint j = 0u; j < per_word; ++j) {
        if (j < n) {
            uint shift = j * UNIT * 8u;
            word = (word & ~(UNIT_MASK << shift)) | (LOAD_UNIT(DATA, map_offsets(first + j).data) << shift);
        }
    }
    WORD_AT(DENSE, w) = word;
}
#endif

void process(OFF_T i) {
#if UNIT >= 4
    if ((P[P_FLAGS] & FLAG_ROWS) != 0u) {   // row mode: iteration i moves row i of the innermost dimension whole
        uint n = uint(P[P_SHAPE + uint(P[P_RANK]) - 1u]);
        Offsets o = map_offsets(i * n);
        for (uint j = 0u; j < n; ++j)
            UNIT_AT(DENSE, o.dense + j) = UNIT_AT(DATA, o.data + j);
        return;
    }
#endif
#if UNIT < 4
    if ((P[P_FLAGS] & FLAG_WORDS) != 0u) {
        process_word(i);
        return;
    }
#endif
    Offsets o = map_offsets(i);
    STORE_UNIT(DENSE, o.dense, LOAD_UNIT(DATA, o.data));
}
#include "grid_loop.glsl"
