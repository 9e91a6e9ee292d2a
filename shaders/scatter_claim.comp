#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter, pass 1: each update claims its target; the update latest in row-major order wins
// (OWNER[target] = max(i + 1)). OWNER is all zeros before this pass; scatter_write.comp restores that.
// ROWS (a scatter of whole rows: dmlgpu/plans/plan.py's ScatterPlan): iteration r is update row r (the index map
// over the rows), which claims its target row: OWNER[row start >> PW(P_OWNER_SHIFT)] = max(r * PW(P_ROW_UNITS)
// + 1), the position of its first unit + 1. CLEAR (with ROWS): the pass after the writes, which zeroes
// the rows' claims again.
// FLAG_DROP (mode="drop"): an update (or row) whose tuple is out of range (NO_OFFSET) claims nothing.
// FEW (devices that bind at most 4 storage buffers): the claims at binding 2 (0 params, 1 indices, 2 claims).
#include "units.glsl"
#include "bindings.glsl"
#if FEW
layout(std430, binding = 2) buffer Owner { uint OWNER[]; };
#else
layout(std430, binding = 4) buffer Owner { uint OWNER[]; };
#endif
#include "index_map.glsl"
#if ROWS
const uint P_OWNER_SHIFT = P_END;        // target row start >> PW(P_OWNER_SHIFT): its claim word
const uint P_ROW_UNITS = P_END + 1u;     // units per row

void process(uint r) {
    uint target = map_offsets(r).data;
    if (target == NO_OFFSET)             // FLAG_DROP: a row out of range claims nothing
        return;
    uint owner = target >> PW(P_OWNER_SHIFT);
#if CLEAR
    OWNER[owner] = 0u;
#else
    atomicMax(OWNER[owner], r * PW(P_ROW_UNITS) + 1u);
#endif
}
#else
void process(OFF_T i) {
    OFF_T target = map_offsets(i).data;
    if (target != NO_OFFSET)             // (FLAG_DROP: an update out of range claims nothing)
        atomicMax(WORD_AT(OWNER, target), uint(i) + 1u);   // the host keeps counts under 2^32 - 1
}
#endif
#include "grid_loop.glsl"
