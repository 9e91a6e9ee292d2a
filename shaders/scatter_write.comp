#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter, pass 2 (after a barrier): the winning update of each target writes it and clears its claim.
// A losing update reads the winner's claim or 0, never its own, so it writes nothing.
// ROWS (scatter_claim.comp's): unit i, at coordinate c of its row, reads its target row's claim and writes
// if the claim is its row's (i - c + 1); the claims are cleared by a pass of their own afterwards (scatter_
// claim.comp's CLEAR), since the units of a row read one claim.
// FEW (devices that bind at most 4 storage buffers; after scatter_claim.comp's FEW): an iteration per unit of
// the output (P[P_TOTAL]: the claim words), which reads no index: a claimed unit takes the update of the
// iteration that claimed it (its dense offset: locate(claim - 1)) and clears the claim. Bindings: 0 params,
// 1 data, 2 dense, 3 claims.
#include "units.glsl"
#if FEW
#define NO_INDICES 1
#define B_DATA 1
#else
#define B_DATA 2
#endif
#include "bindings.glsl"
layout(std430, binding = B_DATA) restrict buffer Data { UNIT_T DATA[]; };
layout(std430, binding = B_DATA + 1) restrict readonly buffer Dense { UNIT_T DENSE[]; };
layout(std430, binding = B_DATA + 2) restrict buffer Owner { uint OWNER[]; };
#include "index_map.glsl"
#if FEW
void process(uint t) {
    uint claim = OWNER[t];
    if (claim != 0u) {
        STORE_UNIT(DATA, t, LOAD_UNIT(DENSE, locate(claim - 1u).dense));
        OWNER[t] = 0u;
    }
}
#elif ROWS
const uint P_OWNER_SHIFT = P_END;

void process(uint i) {
    Position p = locate(i);
    uint data = data_offset(p);
    if (OWNER[(data - p.inner) >> P[P_OWNER_SHIFT]] == i - p.inner + 1u)
        STORE_UNIT(DATA, data, LOAD_UNIT(DENSE, p.dense));
}
#else
void process(OFF_T i) {
    Offsets o = map_offsets(i);
    if (WORD_AT(OWNER, o.data) == uint(i) + 1u) {
        STORE_UNIT(DATA, o.data, LOAD_UNIT(DENSE, o.dense));
        WORD_AT(OWNER, o.data) = 0u;
    }
}
#endif
#include "grid_loop.glsl"
