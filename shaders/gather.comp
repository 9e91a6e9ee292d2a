#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// dense[i] = data[map(i)]: every gather, and the strided copy (tuple size 0).
// VEC (units of 1 to 8 bytes, a packed dense tensor): iteration w writes the VEC bytes w of the dense tensor
// (VEC: 4 or 16), its VEC / UNIT units decoded once and then stepped along the innermost dimension
// (index_map.glsl's advance), their index loads, then their data loads, then the one store. TUPLE_K: the
// tuple size fixed (index_map.glsl's data_offset). Else one unit per iteration, or (FLAG_ROWS, CPU
// devices) one row of the innermost dimension per iteration. WIDE (units.glsl): no VEC.
#include "units.glsl"
#include "bindings.glsl"
layout(std430, binding = 2) restrict readonly buffer Data { UNIT_T DATA[]; };
#if VEC == 16
layout(std430, binding = 3) restrict buffer Dense { uvec4 DENSE[]; };
#elif VEC == 4
layout(std430, binding = 3) restrict buffer Dense { uint DENSE[]; };
#else
layout(std430, binding = 3) restrict buffer Dense { UNIT_T DENSE[]; };
#endif
#include "index_map.glsl"

#if VEC
const uint PER = VEC / UNIT;     // units per iteration (VEC: 4 or 16 bytes of the dense tensor)

#if VEC == 16
// A last, partial group writes only the words that hold its units, and keeps the other bytes of a
// partial last word (no other iteration writes them).
void store_part(uint w, uvec4 v, uint nbytes) {
    [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        if (4u * k + 4u <= nbytes) {
            DENSE[w][k] = v[k];
        } else if (4u * k < nbytes) {
            uint keep = 0xFFFFFFFFu << ((nbytes & 3u) * 8u);
            DENSE[w][k] = (DENSE[w][k] & keep) | v[k];
        }
    }
}
#endif

void process(uint w) {
    uint first = w * PER;
    uint n = min(PER, P[P_UNITS] - first);
    Position p = locate(first);
    uint offset[PER];                // the units' data offsets first (their index loads), then their loads
    [[unroll]] for (uint j = 0u; j < PER; ++j) {
        if (j < n) {
            if (j > 0u)
                advance(p, first + j);
            offset[j] = data_offset(p);
        }
    }
    uvec4 v = uvec4(0u);
    [[unroll]] for (uint j = 0u; j < PER; ++j) {
        if (j < n) {
            UNIT_T u = LOAD_UNIT(DATA, offset[j]);
#if UNIT == 8
            v[2u * j] = u.x;
            v[2u * j + 1u] = u.y;
#elif UNIT == 4
            v[j] = u;
#else
            v[(j * UNIT) >> 2u] |= u << (((j * UNIT) & 3u) * 8u);
#endif
        }
    }
#if VEC == 16
    if (n == PER)
        DENSE[w] = v;
    else
        store_part(w, v, n * UNIT);
#else
    if (n == PER)
        DENSE[w] = v.x;
    else
        DENSE[w] = (DENSE[w] & (0xFFFFFFFFu << (n * UNIT * 8u))) | v.x;
#endif
}
#else
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
    Offsets o = map_offsets(i);
    STORE_UNIT(DENSE, o.dense, LOAD_UNIT(DATA, o.data));
}
#endif
#include "grid_loop.glsl"
