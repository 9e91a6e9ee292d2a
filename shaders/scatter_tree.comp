#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction with order="tree" (dmlgpu/plans/reduction.py; float add and mul, "mean"), after the sort of
// reduce_keys.comp and radix*.comp (KEYS: each target's sorted rows are a run, in row-major order). The L
// updates u_0 .. u_{L-1} of a run (one slice position) are combined in a pairwise tree whose shape depends on
// L alone (never on the workgroup size or the scheduling):
//   T(u_0) = u_0;  T(u_0 .. u_{L-1}) = combine(T(u_0 .. u_{H-1}), T(u_H .. u_{L-1})), H the largest power of
//   two below L;
// then output[target] = finish(combine(output[target], T)), or finish(T) with MODE_EXCLUDE_SELF.
//   TREE == 1 (init): V[j * slice + s] = update s of sorted row j.
//   TREE == 2 (one pass per stride PW(P_PASS) = 1, 2, 4, ... below the row count): the element at run
//     position p (a multiple of 2 stride) whose run has a position p + stride: V[p] = combine(V[p],
//     V[p + stride]). After the pass of stride h, V at a multiple p of 2h holds T of the run's rows
//     [p, min(p + 2h, L)); no element is read and written in one pass.
//   TREE == 3 (final): at each run head, the output's element combined with V[head] (or V[head] alone),
//     then finish() (MODE_MEAN: mean_of(it, L + 1 or L)).
// Run heads and ends are found by binary search in the sorted keys (no more buffers). Bindings: 0 params,
// 1 sorted keys; init: 2 V, 3 updates, 4 sorted rows (FEW: the rows follow the keys); pass: 2 V; final:
// 2 output, 3 V. Element type and operation: ELEM_KIND, ELEM_BYTES, OP (arith.glsl).
#define UNIT ELEM_BYTES
#define IDX64 0
#include "units.glsl"
#include "workgroup.glsl"
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
#define PW(i) P[i]      // parameter word i (bindings.glsl)
layout(std430, binding = 1) restrict readonly buffer Keys { uint IDX[]; };   // IDX: index_map.glsl's name
#if ELEM_BYTES == 8
#define PART_T uvec2
#else
#define PART_T uint
#endif
#if TREE == 1
layout(std430, binding = 2) restrict writeonly buffer Tree { PART_T V[]; };
layout(std430, binding = 3) restrict readonly buffer Dense { UNIT_T DENSE[]; };
#if FEW
#define ROW_AT(j) IDX[PW(P_END + 2u) + (j)]
#else
layout(std430, binding = 4) restrict readonly buffer Rows { uint ROWS[]; };
#define ROW_AT(j) ROWS[j]
#endif
#elif TREE == 2
layout(std430, binding = 2) restrict buffer Tree { PART_T V[]; };
#else
layout(std430, binding = 2) buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) restrict readonly buffer Tree { PART_T V[]; };
#endif
#include "index_map.glsl"
#include "arith.glsl"
const uint P_SLICE = P_END;           // (names and offsets: dmlgpu/plans/reduction.py's, as scatter_reduce.comp)
const uint P_FOLD_SHIFT = P_END + 1u; // target offset = key << PW(P_FOLD_SHIFT)
const uint P_ROWS = P_END + 2u;       // number of sorted rows
const uint P_PASS = P_END + 5u;       // TREE == 2: the pass's stride
const uint P_MODE = P_END + 6u;       // MODE_ bits:
const uint MODE_EXCLUDE_SELF = 1u;    // include_self=False
const uint MODE_MEAN = 2u;            // reduction "mean"

// The first sorted row of row j's run, and one past its last.
uint run_head(uint j) {
    uint key = IDX[j], lo = 0u, hi = j;
    while (lo < hi) {
        uint mid = (lo + hi) >> 1;
        if (IDX[mid] < key) lo = mid + 1u; else hi = mid;
    }
    return lo;
}

uint run_end(uint j) {
    uint key = IDX[j], lo = j + 1u, hi = PW(P_ROWS);
    while (lo < hi) {
        uint mid = (lo + hi) >> 1;
        if (IDX[mid] <= key) lo = mid + 1u; else hi = mid;
    }
    return lo;
}

void process(uint i) {
    uint slice = PW(P_SLICE);
    uint j = i / slice, s = i - j * slice;
#if TREE == 1
    Offsets o = map_offsets(s);
#if defined(VALUES) && VALUES
    V[i] = ROW_AT(j);
#else
    V[i] = LOAD_UNIT(DENSE, ROW_AT(j) + o.dense);
#endif
#elif TREE == 2
    uint stride = PW(P_PASS), partner = j + stride;
    if (partner < PW(P_ROWS) && IDX[partner] == IDX[j] && ((j - run_head(j)) & (2u * stride - 1u)) == 0u)
        V[i] = combine(V[i], V[i + stride * slice]);
#else
    if (j != 0u && IDX[j - 1u] == IDX[j])
        return;                           // not a run's head
    Offsets o = map_offsets(s);
    uint target = (IDX[j] << PW(P_FOLD_SHIFT)) + o.data;
    bool exclude = (PW(P_MODE) & MODE_EXCLUDE_SELF) != 0u;
    ELEM_T acc = V[i];
    if (!exclude) {
        ELEM_T self_ = LOAD_UNIT_ATOMIC(DATA, target);   // neighbouring targets' runs write its word too
        acc = combine(self_, acc);
    }
#if ELEM_KIND >= 2
    if (OP == OP_ADD && (PW(P_MODE) & MODE_MEAN) != 0u)
        acc = mean_of(acc, run_end(j) - j + (exclude ? 0u : 1u));
#endif
    STORE_UNIT(DATA, target, acc);
#endif
}
#include "grid_loop.glsl"
