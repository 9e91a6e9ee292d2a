#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction on CPU devices, without a sort (dmlgpu/plans/reduction_cpu.py): a few invocations each own a
// contiguous range of keys, and each goes through the update rows in row-major order, folding into the
// output those whose key falls in its range. Each target is folded by one invocation, in the rows' order:
// the sequential left fold, whatever the scheduling. Its input is reduce_keys.comp's, unsorted:
//   KEYS[j]  target offset >> PW(P_FOLD_SHIFT) of update row j (row-major)
//   ROWS[j]  its updates offset, or with VALUES (rows of one element of at most 4 bytes) the update itself
// Invocation i = w CPU_LANES + l (workgroup w, local invocation l < CPU_LANES: one SIMD vector of llvmpipe per
// workgroup, so that the workgroups spread over its threads; the other local invocations do nothing), below
// PW(P_TOTAL) = owners x slice: owner i / slice folds the keys [owner PW(P_SPAN), (owner + 1) PW(P_SPAN)) at slice
// position i % slice (map_offsets(), tuple size 0: its offsets in the output, .data, and in an update row,
// .dense). One dispatch goes through rows [PW(P_FIRST), PW(P_LAST)) (llvmpipe ends an invocation's loops after
// 65535 iterations in all, one counter for every loop: the plan gives pieces of rows, each a dispatch after
// a barrier, and the output carries the fold from one piece to the next). By blocks of 32 rows: which of them
// the invocation owns, as a mask of bits computed without a loop, then one loop iteration per row it owns, in
// order (a block costs 2 iterations and one per row owned; llvmpipe runs both sides of a branch under a
// mask, and a loop that no lane enters is skipped: the lanes of a vector fold their own rows side by side).
// PW(P_MODE): MODE_EXCLUDE_SELF (include_self=False: a target's first row replaces its value) and MODE_MEAN
// (float add, reduction "mean") count each target's rows in COUNTS[key * slice + position] (zeroed scratch,
// its owner's alone); the FINISH variant then goes over every (key, position) once: with MODE_MEAN a counted
// one becomes mean_of(its sum, count + 1, or count with MODE_EXCLUDE_SELF), and every count goes back to 0
// (the plan gives float32 add's FINISH variant, without MODE_MEAN, to other types: the counts only).
// Element type and operation: ELEM_KIND, ELEM_BYTES, OP (arith.glsl).
#define UNIT ELEM_BYTES
#define IDX64 0
#include "units.glsl"
#include "workgroup.glsl"
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
#define PW(i) P[i]      // parameter word i (bindings.glsl)
layout(std430, binding = 1) restrict readonly buffer Keys { uint IDX[]; };   // IDX: index_map.glsl's name
layout(std430, binding = 1) restrict readonly buffer Keys4 { uvec4 IDX4[]; };  // the same, 4 at a time
layout(std430, binding = 2) buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) restrict readonly buffer Dense { UNIT_T DENSE[]; };
layout(std430, binding = 4) restrict readonly buffer Rows { uint ROWS[]; };
layout(std430, binding = 5) restrict buffer Counts { uint COUNTS[]; };
#include "index_map.glsl"
#include "arith.glsl"
const uint P_SLICE = P_END;           // (names and offsets: dmlgpu/plans/reduction_cpu.py's)
const uint P_FOLD_SHIFT = P_END + 1u; // target offset = key << PW(P_FOLD_SHIFT)
const uint P_FIRST = P_END + 2u;      // this piece's rows: [PW(P_FIRST), PW(P_LAST))
const uint P_LAST = P_END + 3u;
const uint P_SPAN = P_END + 4u;       // keys per owner
const uint P_MODE = P_END + 6u;       // MODE_ bits (scatter_reduce.comp's):
const uint MODE_EXCLUDE_SELF = 1u;
const uint MODE_MEAN = 2u;

#if FINISH
void process(uint i) {                // (key, slice position) i
    uint count = COUNTS[i];
    if (count == 0u)
        return;
    COUNTS[i] = 0u;
    if ((PW(P_MODE) & MODE_MEAN) != 0u) {
        uint slice = PW(P_SLICE), key = i / slice;
        uint target = (key << PW(P_FOLD_SHIFT)) + map_offsets(i - key * slice).data;
        count += (PW(P_MODE) & MODE_EXCLUDE_SELF) != 0u ? 0u : 1u;
        ELEM_T mean = mean_of(LOAD_UNIT_ATOMIC(DATA, target), count);
        STORE_UNIT(DATA, target, mean);
    }
}
#include "grid_loop.glsl"
#else
ELEM_T update(uint j, uint dense) {
#if defined(VALUES) && VALUES
    return ROWS[j];
#else
    return LOAD_UNIT(DENSE, ROWS[j] + dense);
#endif
}

// This invocation's keys [g_lo, g_lo + g_span), slice position g_s and parameters (constant over the dispatch)
uint g_lo, g_span, g_shift, g_slice, g_s;
Offsets g_o;
bool g_counted, g_exclude;

// Row j (key ``key``, owned by this invocation) folded into its target.
void fold(uint j, uint key) {
    uint target = (key << g_shift) + g_o.data;
    ELEM_T x = update(j, g_o.dense);
    bool first = false;
    if (g_counted) {
        uint c = key * g_slice + g_s;
        first = g_exclude && COUNTS[c] == 0u;
        COUNTS[c] += 1u;
    }
    ELEM_T acc = first ? x : combine(LOAD_UNIT_ATOMIC(DATA, target), x);   // (STORE_UNIT clears before it stores)
    STORE_UNIT(DATA, target, acc);
}

// Bits 4q..4q+3: which of the 4 rows of the key quad ``q`` (rows 4q..4q+3) this invocation owns.
#define OWNED(q) (owned4(IDX4[q]) << (4u * ((q) & 7u)))
uint owned4(uvec4 keys) {
    bvec4 h = lessThan(keys - g_lo, uvec4(g_span));
    return (h.x ? 1u : 0u) | (h.y ? 2u : 0u) | (h.z ? 4u : 0u) | (h.w ? 8u : 0u);
}

void main() {
    uint lane = gl_LocalInvocationID.x, i = gl_WorkGroupID.x * CPU_LANES + lane;
    if (lane >= CPU_LANES || i >= PW(P_TOTAL))
        return;
    g_slice = PW(P_SLICE);
    g_span = PW(P_SPAN);
    g_shift = PW(P_FOLD_SHIFT);
    uint owner = i / g_slice;
    g_s = i - owner * g_slice;
    g_lo = owner * g_span;
    g_o = map_offsets(g_s);
    g_counted = (PW(P_MODE) & (MODE_EXCLUDE_SELF | MODE_MEAN)) != 0u;
    g_exclude = (PW(P_MODE) & MODE_EXCLUDE_SELF) != 0u;
    uint last = PW(P_LAST), j = PW(P_FIRST);       // PW(P_FIRST): a multiple of 32
    // Blocks of 32 rows: which of them this invocation owns, as a mask (written out: no loop), then a loop over
    // the rows owned, in order. The lanes of a vector fold distinct targets: their rows side by side.
    for (; j + 32u <= last; j += 32u) {
        uint q = j >> 2u;
        uint m = OWNED(q) | OWNED(q + 1u) | OWNED(q + 2u) | OWNED(q + 3u) |
                 OWNED(q + 4u) | OWNED(q + 5u) | OWNED(q + 6u) | OWNED(q + 7u);
        while (m != 0u) {
            uint k = findLSB(m);
            m &= m - 1u;
            fold(j + k, IDX[j + k]);
        }
    }
    for (; j < last; ++j) {                      // the last rows, one at a time
        uint key = IDX[j];
        for (uint hit = key - g_lo < g_span ? 1u : 0u; hit != 0u; --hit)   // a loop: see above
            fold(j, key);
    }
}
#endif
