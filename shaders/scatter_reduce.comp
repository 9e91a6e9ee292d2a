#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction, last step (dmlgpu/reduction.py): output[target] = combine(... combine(output[target],
// u_0) ..., u_m) over the updates of each target, in row-major order of the updates: deterministic, no
// atomics on values. Its input is the (key, row) pairs of reduce_keys.comp stably sorted by key, so each
// target's rows form one run, in row-major order:
//   KEYS[j]  target offset >> P[P_KEY_SHIFT] of the j-th sorted row
//   ROWS[j]  its updates offset
// Iteration i is (sorted position j, position within the slice). Only the head of a run (j == 0 or
// KEYS[j - 1] != KEYS[j]) works: it folds the run's rows in order; the others return at once.
// map_offsets() (tuple size 0) gives a slice position's offsets in the output (.data) and in an update row
// (.dense). Element type and operation: ELEM_KIND, ELEM_BYTES, OP (arith.glsl).
#define UNIT ELEM_BYTES
#define IDX64 0
#include "units.glsl"
#include "workgroup.glsl"
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
layout(std430, binding = 1) restrict readonly buffer Keys { uint IDX[]; };   // IDX: index_map.glsl's name
layout(std430, binding = 2) buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) restrict readonly buffer Dense { UNIT_T DENSE[]; };
layout(std430, binding = 4) restrict readonly buffer Rows { uint ROWS[]; };
#include "index_map.glsl"
#include "arith.glsl"
const uint P_SLICE = P_END;           // iterations per slice (elements of one update row)
const uint P_KEY_SHIFT = P_END + 1u;  // target offset = key << P[P_KEY_SHIFT]
const uint P_ROWS = P_END + 2u;       // number of sorted rows
void process(uint i) {
    uint slice = P[P_SLICE];
    uint j = i / slice;
    uint key = IDX[j];
    if (j != 0u && IDX[j - 1u] == key)
        return;
    Offsets o = map_offsets(i - j * slice);
    uint target = (key << P[P_KEY_SHIFT]) + o.data;
#if UNIT < 4
    // An atomic read: threads of neighbouring targets update the other bits of this word concurrently.
    uint b = target * UNIT;
    ELEM_T acc = (atomicOr(DATA[b >> 2u], 0u) >> ((b & 3u) * 8u)) & UNIT_MASK;
#else
    ELEM_T acc = DATA[target];
#endif
    uint rows = P[P_ROWS];
    for (uint r = j; r < rows && IDX[r] == key; ++r)
        acc = combine(acc, LOAD_UNIT(DENSE, ROWS[r] + o.dense));
    STORE_UNIT(DATA, target, acc);
}
#include "grid_loop.glsl"
