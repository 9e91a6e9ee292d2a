#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction (dmlgpu/reduction.py): output[target] = combine(... combine(output[target], u_0) ..., u_n)
// over the updates of each distinct target, in row-major order of the updates: deterministic, no atomics
// on values. The host groups the update rows by target (a stable sort) and uploads the run table:
//   TABLE[P_TARGETS + r]       output offset of run r's target slice
//   TABLE[P_STARTS + r .. + 1] [start, end) of run r in the rows list
//   TABLE[P_ROWS + j]          updates offset of the j-th update row, grouped by run
// Iteration i is (run, position within the slice); map_offsets() (tuple size 0) gives the position's
// offsets within the slice in the output (.data) and in an update row (.dense).
// Element type and operation: ELEM_KIND, ELEM_BYTES, OP (arith.glsl).
#define UNIT ELEM_BYTES
#define IDX64 0
#include "units.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Params { uint P[]; };
layout(std430, binding = 1) readonly buffer Table { uint IDX[]; };
layout(std430, binding = 2) buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) readonly buffer Dense { UNIT_T DENSE[]; };
#include "index_map.glsl"
#include "arith.glsl"

const uint P_SLICE = P_END;           // iterations per slice (elements of one update row)
const uint P_TARGETS = P_END + 1u;    // word offsets of the three parts of TABLE
const uint P_STARTS = P_END + 2u;
const uint P_ROWS = P_END + 3u;

void process(uint i) {
    uint slice = P[P_SLICE];
    uint run = i / slice;
    Offsets o = map_offsets(i - run * slice);
    uint target = IDX[P[P_TARGETS] + run] + o.data;
    uint begin = IDX[P[P_STARTS] + run], end = IDX[P[P_STARTS] + run + 1u];
    uint rows = P[P_ROWS];
#if UNIT < 4
    // An atomic read: threads of neighbouring targets update the other bits of this word concurrently.
    uint b = target * UNIT;
    ELEM_T acc = (atomicOr(DATA[b >> 2u], 0u) >> ((b & 3u) * 8u)) & UNIT_MASK;
#else
    ELEM_T acc = DATA[target];
#endif
    for (uint j = begin; j < end; ++j)
        acc = combine(acc, LOAD_UNIT(DENSE, IDX[rows + j] + o.dense));
    STORE_UNIT(DATA, target, acc);
}
#include "grid_loop.glsl"
