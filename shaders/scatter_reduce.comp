#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction, last step (dmlgpu/reduction.py): output[target] = combine(... combine(output[target],
// u_0) ..., u_m) over the updates of each target, in row-major order of the updates: deterministic, no
// atomics on values. Its input is the (key, row) pairs of reduce_keys.comp stably sorted by key, so each
// target's rows form one run, in row-major order:
//   KEYS[j]  target offset >> P[P_KEY_SHIFT] of the j-th sorted row
//   ROWS[j]  its updates offset, or with VALUES (rows of one element of at most 4 bytes) the update itself
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
// The update of sorted row j at offset ``dense`` within the row.
ELEM_T update(uint j, uint dense) {
#if defined(VALUES) && VALUES
    return ROWS[j];
#else
    return LOAD_UNIT(DENSE, ROWS[j] + dense);
#endif
}
#if defined(FOLD_BLOCKS) && ELEM_KIND == 2 && ELEM_BYTES == 4 && (OP == OP_ADD || OP == OP_MUL)
// Variant FOLD_BLOCKS (float32 add and mul, for GPUs): inside a run, blocks of FAST_BLOCK updates, their
// loads issued together and the device's own operations in a row (a long run's critical path: one add
// per update instead of loads and NaN tests), and the NaN rules of combine() only when the block's result
// is a NaN. A NaN comes only from a NaN operand or an invalid operation, and stays NaN through every later
// add or multiply, so a result that is not a NaN had none on the way: combine() gives the same bits
// then. A NaN result redoes the block with combine(), from the same accumulator. (On lavapipe the blocks
// measure 2x slower: dmlgpu/reduction.py picks the variant by device type.)
#define FAST_BLOCK 16u
uint fold_block(uint acc, uint j, uint dense) {
    precise float s = uintBitsToFloat(acc);
    for (uint k = 0u; k < FAST_BLOCK; ++k) {
#if OP == OP_ADD
        s = s + uintBitsToFloat(update(j + k, dense));
#else
        s = s * uintBitsToFloat(update(j + k, dense));
#endif
    }
    uint bits = floatBitsToUint(s);
    uint redo = f32_is_nan(bits) ? FAST_BLOCK : 0u;   // a loop, not a branch: SIMD CPUs skip it when no lane needs it
    for (uint k = 0u; k < redo; ++k)
        acc = combine(acc, update(j + k, dense));
    return redo == 0u ? bits : acc;
}
#endif
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
#ifdef FAST_BLOCK
        while (j + FAST_BLOCK <= rows && IDX[j + FAST_BLOCK - 1u] == key) {   // sorted: the block is in the run
            acc = fold_block(acc, j, o.dense);
            j += FAST_BLOCK;
        }
        while (j < rows && IDX[j] == key) {
#else
        do {
#endif
            acc = combine(acc, update(j, o.dense));
            ++j;
#ifdef FAST_BLOCK
        }
#else
        } while (j < rows && IDX[j] == key);
#endif
        STORE_UNIT(DATA, target, acc);
    }
}
#include "grid_loop.glsl"
