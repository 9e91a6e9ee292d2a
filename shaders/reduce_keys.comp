#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction, step 1 (dmlgpu/plans/reduction.py): for update row r (row-major), its target's output
// offset (index_map.glsl over the rows: indices read, wrapped and clamped) and its updates offset:
//   KEYS[r] = target offset >> PW(P_KEY_SHIFT) (the low bits every target offset has at zero)
//   ROWS[r] = updates offset of row r, or with VALUES (rows of one element of VALUES = 1, 2 or 4 bytes) the
//             update itself (zero-extended): the sort then carries the values, and the fold reads them in
//             order instead of gathering them
// Bindings as bindings.glsl, with KEYS and ROWS in place of the data and dense tensors, then the updates.
// FEW (devices that bind at most 4 storage buffers): ROWS follow the PW(P_TOTAL) keys in the KEYS buffer.
// FIRST_HIST: also the radix sort's first histogram (radix_hist.comp's, over the keys as they are written: one pass
// fewer over them), its words (radix.glsl's) from PW(P_END + 1); a workgroup per tile of the sort, as there.
#include "bindings.glsl"
layout(std430, binding = 2) restrict writeonly buffer Keys { uint KEYS[]; };
#if FEW
#define ROW_AT(r) KEYS[PW(P_TOTAL) + (r)]
#define B_DENSE 3
#else
layout(std430, binding = 3) restrict writeonly buffer Rows { uint ROWS[]; };
#define ROW_AT(r) ROWS[r]
#define B_DENSE 4
#endif
#if VALUES
#define UNIT VALUES
#include "units.glsl"
layout(std430, binding = B_DENSE) restrict readonly buffer Dense { UNIT_T DENSE[]; };
#endif
#include "index_map.glsl"
const uint P_KEY_SHIFT = P_END;
uint process(uint r) {
    Offsets o = map_offsets(r);
    uint key = o.data >> PW(P_KEY_SHIFT);
    KEYS[r] = key;
#if VALUES
    ROW_AT(r) = LOAD_UNIT(DENSE, o.dense);
#else
    ROW_AT(r) = o.dense;
#endif
    return key;
}
#if FIRST_HIST
#if VALUES
layout(std430, binding = B_DENSE + 1) restrict buffer Hist { uint HIST[]; };
#else
layout(std430, binding = B_DENSE) restrict buffer Hist { uint HIST[]; };
#endif
#define R_BASE (P_END + 1u)
#define HIST_KEY(i) process(i)
#include "radix.glsl"
void main() {
    histogram();
}
#else
#include "grid_loop.glsl"
#endif
