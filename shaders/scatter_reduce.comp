#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction, last step (dmlgpu/reduction.py): output[target] = combine(... combine(output[target],
// u_0) ..., u_m) over the updates of each target, in row-major order of the updates: deterministic, no
// atomics on values. Its input is the (key, row) pairs of reduce_keys.comp stably sorted by key, so each
// target's rows form one run, in row-major order:
//   KEYS[j]  target offset >> P[P_KEY_SHIFT] of the j-th sorted row
//   ROWS[j]  its updates offset
// Iteration i is (chunk c of P[P_CHUNK] consecutive sorted rows, position within the slice): it folds every
// run whose head (first row) lies in chunk c, the last one to its end even past the chunk, so each run is
// folded by one invocation, in order, and every invocation has about P[P_CHUNK] rows to go through
// whatever the lengths of the runs. For each run it reads the output once, combines, and writes once.
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
const uint P_CHUNK = P_END + 3u;      // sorted rows per chunk
void process(uint i) {
    uint slice = P[P_SLICE], rows = P[P_ROWS], chunk = P[P_CHUNK];
    uint c = i / slice;
    Offsets o = map_offsets(i - c * slice);
    uint j = c * chunk, end = min(rows, j + chunk);
    if (j != 0u) {                    // the rest of a run whose head lies in an earlier chunk
        uint before = IDX[j - 1u];
        while (j < end && IDX[j] == before)
            ++j;
    }
    while (j < end) {
        uint key = IDX[j];
        uint target = (key << P[P_KEY_SHIFT]) + o.data;
#if UNIT < 4
        // An atomic read: threads of neighbouring targets update the other bits of this word concurrently.
        uint b = target * UNIT;
        ELEM_T acc = (atomicOr(DATA[b >> 2u], 0u) >> ((b & 3u) * 8u)) & UNIT_MASK;
#else
        ELEM_T acc = DATA[target];
#endif
        do {
            acc = combine(acc, LOAD_UNIT(DENSE, ROWS[j] + o.dense));
            ++j;
        } while (j < rows && IDX[j] == key);
        STORE_UNIT(DATA, target, acc);
    }
}
#include "grid_loop.glsl"
