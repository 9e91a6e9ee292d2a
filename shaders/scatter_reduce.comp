#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Scatter reduction, last step (dmlgpu/plans/reduction.py): output[target] = combine(... combine(output[target],
// u_0) ..., u_m) over the updates of each target, in row-major order of the updates: deterministic, no
// atomics on values. Its input is the (key, row) pairs of reduce_keys.comp stably sorted by key, so each
// target's rows form one run, in row-major order:
//   KEYS[j]  target offset >> PW(P_FOLD_SHIFT) of the j-th sorted row
//   ROWS[j]  its updates offset, or with VALUES (rows of one element of at most 4 bytes) the update itself
// Iteration i is (chunk c of PW(P_CHUNK) consecutive sorted rows, position within the slice): it folds every
// run whose head (first row) lies in chunk c, the last one to its end even past the chunk, so each run is
// folded by one invocation, in order, and every invocation has about PW(P_CHUNK) rows to go through
// whatever the lengths of the runs. For each run it reads the output once, combines, and writes once.
// map_offsets() (tuple size 0) gives a slice position's offsets in the output (.data) and in an update row
// (.dense). Element type and operation: ELEM_KIND, ELEM_BYTES, OP (arith.glsl).
// Variant PARTIALS (associative operations: min/max of every type, integer add/mul; dmlgpu/plans/reduction.py
// gives the argument) folds long runs in a tree of passes instead of one invocation's loop:
//   PARTIALS == 1, level 0 (over the sorted rows, chunks of PW(P_CHUNK)): runs headed and ending in the
//     chunk as above. The run that comes into the chunk from an earlier one (the chunk's first row is no
//     head) is folded over its rows in the chunk, without the output, into element c of the next level:
//     NEXT_VALS[c] (per slice position) and NEXT_KEYS[c] = its key (NEXT_KEYS[c] = NO_KEY where the chunk's
//     first row is a head: no element). The last run headed in the chunk, if it goes on past the chunk,
//     leaves its accumulator (output's value, then its rows in the chunk) in HEADS[c] instead of writing.
//   PARTIALS == 2, level L >= 1 (over the elements that level L - 1 made, chunks of PW(P_CHUNK)): the same,
//     with the elements for rows, NO_KEY elements belonging to no run, and a run headed at element e
//     starting from HEADS_IN[e - 1] (element e - 1 is chunk e - 1 of level L - 1, where the run is headed
//     and which left its accumulator there) instead of the output.
// So the run of a target is combined in order: output's value, its rows in its head chunk, then the
// partials of the next chunks, each the fold of consecutive rows in order, grouped the same way level by
// level; each element and each accumulator is written by one invocation and read by the next level's.
// PW(P_MODE) (every variant): MODE_EXCLUDE_SELF (include_self=False) starts each run from its first row
// instead of the output's value; the MEAN variants (float add: reduction "mean"; PW(P_MODE) has MODE_MEAN too)
// write mean_of(the run's sum, its rows + 1, or its rows with MODE_EXCLUDE_SELF) (arith.glsl). Targets without
// rows keep their value.
#define UNIT ELEM_BYTES
#define IDX64 0
#include "units.glsl"
#include "workgroup.glsl"
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
#define PW(i) P[i]      // parameter word i (bindings.glsl)
layout(std430, binding = 1) restrict readonly buffer Keys { uint IDX[]; };   // IDX: index_map.glsl's name
layout(std430, binding = 2) buffer Data { UNIT_T DATA[]; };
#if ELEM_BYTES == 8
#define PART_T uvec2
#else
#define PART_T uint
#endif
#if FEW
// FEW (devices that bind at most 4 storage buffers; no PARTIALS): the sorted rows follow the PW(P_END + 2)
// (P_ROWS) sorted keys in the keys buffer (reduce_keys.comp's and radix_scatter.comp's FEW). Bindings: 0 params,
// 1 keys and rows, 2 data, 3 dense.
layout(std430, binding = 3) restrict readonly buffer Dense { UNIT_T DENSE[]; };
#define ROW_AT(j) IDX[PW(P_END + 2u) + (j)]
#elif !defined(PARTIALS) || PARTIALS < 2
layout(std430, binding = 3) restrict readonly buffer Dense { UNIT_T DENSE[]; };
layout(std430, binding = 4) restrict readonly buffer Rows { uint ROWS[]; };
#define ROW_AT(j) ROWS[j]
#else
layout(std430, binding = 3) restrict readonly buffer Vals { PART_T VALS[]; };         // level L's elements
layout(std430, binding = 4) restrict readonly buffer HeadsIn { PART_T HEADS_IN[]; };  // level L - 1's heads
#endif
#if defined(PARTIALS) && PARTIALS
layout(std430, binding = 5) restrict writeonly buffer NextKeys { uint NEXT_KEYS[]; };
layout(std430, binding = 6) restrict writeonly buffer NextVals { PART_T NEXT_VALS[]; };
layout(std430, binding = 7) restrict writeonly buffer Heads { PART_T HEADS[]; };
const uint NO_KEY = 0xFFFFFFFFu;      // no element (reduction.py keeps every key below it)
#endif
#include "index_map.glsl"
#include "arith.glsl"
// The update of sorted row j at offset ``dense`` within the row.
ELEM_T update(uint j, uint dense) {
#if defined(PARTIALS) && PARTIALS == 2
    return VALS[j * PW(P_END) + dense];  // dense: the slice position
#elif defined(VALUES) && VALUES
    return ROW_AT(j);
#else
    return LOAD_UNIT(DENSE, ROW_AT(j) + dense);
#endif
}
#if defined(FOLD_BLOCKS) && ELEM_KIND == 2 && ELEM_BYTES == 4   // (FOLD_BLOCKS: add and mul alone)
// Variant FOLD_BLOCKS (float32 add and mul, for GPUs; the other float types': below): inside a run, blocks of
// FAST_BLOCK updates, their loads issued together and the device's own operations in a row (a long run's
// critical path: one add per update instead of loads and NaN tests), and the NaN rules of combine() only when
// the block's result is a NaN. A NaN comes only from a NaN operand or an invalid operation, and stays NaN
// through every later add or multiply, so a result that is not a NaN had none on the way: combine() gives the same bits
// then. A NaN result redoes the block with combine(), from the same accumulator. (On lavapipe the blocks
// measure 2x slower: dmlgpu/plans/reduction.py picks the variant by device type.)
#define FAST_BLOCK 16u
uint fold_block(uint acc, uint j, uint dense) {
    precise float s = uintBitsToFloat(acc);
    for (uint k = 0u; k < FAST_BLOCK; ++k) {
        if (OP == OP_ADD)
            s = s + uintBitsToFloat(update(j + k, dense));
        else
            s = s * uintBitsToFloat(update(j + k, dense));
    }
    uint bits = floatBitsToUint(s);
    uint redo = f32_is_nan(bits) ? FAST_BLOCK : 0u;   // a loop, not a branch: SIMD CPUs skip it when no lane needs it
    for (uint k = 0u; k < redo; ++k)
        acc = combine(acc, update(j + k, dense));
    return redo == 0u ? bits : acc;
}
#elif defined(FOLD_BLOCKS)
// Variant FOLD_BLOCKS of the other float add and mul (float16, bfloat16, float8; for GPUs): inside a run, blocks of
// FAST_BLOCK updates whose loads are all issued first. float8 then takes combine()'s steps in order, bfloat16 and
// float16 arith.glsl's FAST_STEP; a block that met anything it does not take is redone with combine(), from the
// same accumulator. The bits of the plain loop either way.
#define FAST_BLOCK 16u
ELEM_T fold_block(ELEM_T acc, uint j, uint dense) {
    ELEM_T v[FAST_BLOCK];
    [[unroll]] for (uint k = 0u; k < FAST_BLOCK; ++k)
        v[k] = update(j + k, dense);
#ifdef FAST_STEP
    uint s = acc;
    bool plain = true;
    [[unroll]] for (uint k = 0u; k < FAST_BLOCK; ++k) {
        uint bits = f32_op(uintBitsToFloat(fast_f32(s)), uintBitsToFloat(fast_f32(v[k])));
        plain = all(bvec4(plain, fast_operand(s), fast_operand(v[k]), fast_result(bits)));   // (no branches)
        s = fast_round(bits);
    }
    if (plain)
        return s;
#endif
    for (uint k = 0u; k < FAST_BLOCK; ++k)
        acc = combine(acc, v[k]);
    return acc;
}
#endif
const uint P_SLICE = P_END;           // (names and offsets: dmlgpu/plans/reduction.py's)
// iterations per slice (elements of one update row)
const uint P_FOLD_SHIFT = P_END + 1u; // target offset = key << PW(P_FOLD_SHIFT)
const uint P_ROWS = P_END + 2u;       // number of sorted rows
const uint P_CHUNK = P_END + 3u;      // sorted rows per chunk
const uint P_PIECE = P_END + 4u;      // 0, or (CPU devices, sequential fold) rows of a run one pass folds ...
const uint P_PASS = P_END + 5u;       // ... and which piece of its runs this pass folds (see process())
const uint P_MODE = P_END + 6u;       // MODE_ bits:
const uint MODE_EXCLUDE_SELF = 1u;    // include_self=False: a run starts from its first update, not the output
const uint MODE_MEAN = 2u;            // reduction "mean" (float add variants): a run writes mean_of(sum, count)

// What a run that has ended writes: its accumulator, or in the MEAN variants (reduction "mean", float add:
// a variant of their own, so that add's carries none of the division's code) the accumulator divided by
// ``count`` (its rows, plus one for the output's value unless MODE_EXCLUDE_SELF).
ELEM_T finish(ELEM_T acc, uint count) {
#if ELEM_KIND >= 2
    return MEAN != 0u ? mean_of(acc, count) : acc;
#else
    return acc;
#endif
}
#if defined(PARTIALS) && PARTIALS
void process(uint i) {
    uint slice = PW(P_SLICE), rows = PW(P_ROWS), chunk = PW(P_CHUNK);
    uint c = i / slice, s = i - c * slice;
    Offsets o = map_offsets(s);
#if PARTIALS == 2
    o.dense = s;
#endif
    uint j = c * chunk, end = min(rows, j + chunk);
    uint first = IDX[j];
    bool inside = j != 0u && first != NO_KEY && IDX[j - 1u] == first;
    if (s == 0u)
        NEXT_KEYS[c] = inside ? first : NO_KEY;
    if (inside) {                     // the run that comes from an earlier chunk: its partial, in order
        ELEM_T acc = update(j, o.dense);
        for (++j; j < end && IDX[j] == first; ++j)
            acc = combine(acc, update(j, o.dense));
        NEXT_VALS[i] = acc;
    }
    while (j < end) {
        uint key = IDX[j];
        if (key == NO_KEY) {          // PARTIALS == 2: no element here
            ++j;
            continue;
        }
        uint target = (key << PW(P_FOLD_SHIFT)) + o.data;
#if PARTIALS == 2
        ELEM_T acc = HEADS_IN[(j - 1u) * slice + s];
#else
        ELEM_T acc;
        if ((PW(P_MODE) & MODE_EXCLUDE_SELF) != 0u)
            acc = update(j++, o.dense);
        else
            acc = LOAD_UNIT_ATOMIC(DATA, target);
#endif
        for (; j < end && IDX[j] == key; ++j)
            acc = combine(acc, update(j, o.dense));
        if (j == end && end < rows && IDX[end] == key)
            HEADS[i] = acc;           // goes on past the chunk: the next level finishes it
        else
            STORE_UNIT(DATA, target, acc);
    }
}
#else
// The runs headed in chunk c = i / slice (the first pass, PW(P_PASS) == 0), each folded from its head: the
// output's value (or with MODE_EXCLUDE_SELF its first row), then its rows in order: to its end, or with
// pieces (PW(P_PIECE) != 0: CPU devices, whose compiler, llvmpipe, ends an invocation's loops after 65535
// iterations in all) its first PW(P_PIECE) rows. Pass k >= 1 (a dispatch of its own, after a barrier) goes on
// with the one run headed last in the chunk from the output's value, over its rows [head + k PW(P_PIECE),
// head + (k + 1) PW(P_PIECE)). The accumulator passes through the output unchanged (it is of the element
// type), so the bits are those of one sequential loop; the pass that reaches a run's end writes finish().
// (The FOLD_BLOCKS variants fold their runs whole in process(): the plan never gives them pieces.)
uint fold_run(uint j, uint head, uint stop, uint target, uint dense, ELEM_T acc) {
    uint rows = PW(P_ROWS), key = IDX[head];
    for (; j < stop && IDX[j] == key; ++j)
        acc = combine(acc, update(j, dense));
    bool ended = j == rows || IDX[j] != key;
    uint count = j - head + ((PW(P_MODE) & MODE_EXCLUDE_SELF) != 0u ? 0u : 1u);
    STORE_UNIT(DATA, target, ended ? finish(acc, count) : acc);
    return j;
}

void process(uint i) {
    uint slice = PW(P_SLICE), rows = PW(P_ROWS), chunk = PW(P_CHUNK), piece = PW(P_PIECE);
    uint c = i / slice;
    Offsets o = map_offsets(i - c * slice);
    uint j = c * chunk, end = min(rows, j + chunk);
    if (PW(P_PASS) != 0u) {            // pieces: the last run headed in this chunk, from its piece PW(P_PASS)
        uint head = end;
        for (; j < end; ++j)
            if (j == 0u || IDX[j] != IDX[j - 1u])
                head = j;
        j = head + PW(P_PASS) * piece;
        if (head == end || j >= rows || IDX[j] != IDX[head])
            return;                   // no run headed here, or it ended in an earlier piece
        uint target = (IDX[head] << PW(P_FOLD_SHIFT)) + o.data;
        fold_run(j, head, min(rows, j + piece), target, o.dense, LOAD_UNIT_ATOMIC(DATA, target));
        return;
    }
    if (j != 0u) {                    // the rest of a run whose head lies in an earlier chunk
        uint before = IDX[j - 1u];
        while (j < end && IDX[j] == before)
            ++j;
    }
    while (j < end) {
        uint head = j, key = IDX[j], target = (key << PW(P_FOLD_SHIFT)) + o.data;
        ELEM_T acc;
        if ((PW(P_MODE) & MODE_EXCLUDE_SELF) != 0u)
            acc = update(j++, o.dense);
        else
            acc = LOAD_UNIT_ATOMIC(DATA, target);
#ifdef FAST_BLOCK
        // GPUs: the whole run in this loop, written out as before include_self and "mean" (through fold_run
        // the long runs of skewed targets measured 19-24 % slower on an H200)
        while (j + FAST_BLOCK <= rows && IDX[j + FAST_BLOCK - 1u] == key) {   // sorted: the block is in the run
            acc = fold_block(acc, j, o.dense);
            j += FAST_BLOCK;
        }
        while (j < rows && IDX[j] == key) {
            acc = combine(acc, update(j, o.dense));
            ++j;
        }
        STORE_UNIT(DATA, target, finish(acc, j - head + ((PW(P_MODE) & MODE_EXCLUDE_SELF) != 0u ? 0u : 1u)));
#else
        uint stop = piece == 0u ? rows : min(rows, head + piece);
        j = fold_run(j, head, stop, target, o.dense, acc);   // the run's end (or its piece's, past the chunk)
#endif
    }
}
#endif
#include "grid_loop.glsl"
