#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter, pass 2 (after a barrier): the winning update of each target writes it and clears its claim.
// A losing update reads the winner's claim or 0, never its own, so it writes nothing.
// ROWS (scatter_claim.comp's): unit i, at coordinate c of its row, reads its target row's claim and writes
// if the claim is its row's (i - c + 1); the claims are cleared by a pass of their own afterwards (scatter_
// claim.comp's CLEAR), since the units of a row read one claim.
// SMALL (with ROWS): the whole scatter in one dispatch, for at most WORKGROUP_SIZE update rows (no claim
// buffer, no other pass): in every workgroup, invocation r takes update row r and the rows' targets meet in
// shared memory, where a row wins when no later row has its target; then the grid writes the units of the
// winning rows (iteration f: unit f % units of row f / units).
// UNIQUE: no claims at all, for updates that promise distinct targets (unique_indices=True): each unit is
// written where it goes. Bindings: 0 params, 1 indices, 2 data, 3 dense.
// COPY (with ROWS): the output's copy of the input and the rows' writes in one pass over the output's units, for
// an input and an output of one packed layout (the copy is unit u to unit u), after the rows' claims: unit u
// of a row window that an update row claimed (the window [u - u % L, +L) of L = PW(P_ROW_UNITS) units starts a
// target row when its claim word, start >> PW(P_OWNER_SHIFT), is set) takes that row's update, every other unit
// the input's. Bindings: 0 params, 1 input (no index is read), 2 output, 3 updates, 4 claims. PW(P_TOTAL):
// the output's units; PW(P_CLAIM_WORDS): the claim words. COPY with CLEARS (rows of L units where L divides
// WORKGROUP_SIZE): the claims are cleared in the same pass, so no clearing pass follows: a workgroup takes
// WORKGROUP_SIZE consecutive units at a time (whole row windows), and after a barrier (every unit of a window
// has read its claim) the first unit of each claimed window clears its claim word.
// FLAG_DROP (mode="drop"): an update whose tuple is out of range (data_offset: NO_OFFSET) writes nothing (and
// claimed nothing). COPY and FEW read no index: they write what the claims say.
// FEW (devices that bind at most 4 storage buffers; after scatter_claim.comp's FEW): an iteration per unit of
// the output (PW(P_TOTAL): the claim words), which reads no index: a claimed unit takes the update of the
// iteration that claimed it (its dense offset: locate(claim - 1)) and clears the claim. Bindings: 0 params,
// 1 data, 2 dense, 3 claims.
#include "units.glsl"
#if FEW || COPY
#define NO_INDICES 1
#endif
#if FEW
#define B_DATA 1
#else
#define B_DATA 2
#endif
#include "bindings.glsl"
layout(std430, binding = B_DATA) restrict buffer Data { UNIT_T DATA[]; };
layout(std430, binding = B_DATA + 1) restrict readonly buffer Dense { UNIT_T DENSE[]; };
#if !SMALL && !UNIQUE
layout(std430, binding = B_DATA + 2) restrict buffer Owner { uint OWNER[]; };
#endif
#if COPY
layout(std430, binding = 1) restrict readonly buffer Input { UNIT_T INPUT[]; };
#endif
#include "index_map.glsl"
#if COPY
const uint P_OWNER_SHIFT = P_END;        // scatter_claim.comp's ROWS words
const uint P_ROW_UNITS = P_END + 1u;
const uint P_CLAIM_WORDS = P_END + 2u;   // claim words (the windows past them start no target row)

// Unit u copied or taken from its window's claimed row; the claim word it read if u is the first unit of a
// claimed window, else ~0u.
uint copy_unit(uint u) {
    uint units = PW(P_ROW_UNITS), shift = PW(P_OWNER_SHIFT);
    uint c = u % units, start = u - c, w = start >> shift;
    uint claim = (start & ((1u << shift) - 1u)) == 0u && w < PW(P_CLAIM_WORDS) ? OWNER[w] : 0u;
    if (claim != 0u) {
        STORE_UNIT(DATA, u, LOAD_UNIT(DENSE, locate(claim - 1u).dense + c));
    } else {
        STORE_UNIT(DATA, u, LOAD_UNIT(INPUT, u));
    }
    return claim != 0u && c == 0u ? w : ~0u;
}
#if CLEARS
void main() {
    uint total = PW(P_TOTAL), step = gl_NumWorkGroups.x * WORKGROUP_SIZE;
    for (uint base = gl_WorkGroupID.x * WORKGROUP_SIZE; base < total;) {   // (uniform in the workgroup)
        uint u = base + gl_LocalInvocationID.x;
        uint w = u < total ? copy_unit(u) : ~0u;
        barrier();
        if (w != ~0u)
            OWNER[w] = 0u;
        if (total - base <= step)
            break;                      // base + step would reach or pass total (or wrap)
        base += step;
    }
}
#else
void process(uint u) {
    copy_unit(u);
}
#endif
#elif FEW
void process(uint t) {
    uint claim = OWNER[t];
    if (claim != 0u) {
        STORE_UNIT(DATA, t, LOAD_UNIT(DENSE, locate(claim - 1u).dense));
        OWNER[t] = 0u;
    }
}
#elif SMALL
const uint P_ROW_UNITS = P_END + 1u;     // units per row (scatter_claim.comp's ROWS words)
shared uint TARGET[WORKGROUP_SIZE];      // row r's first unit in DATA (~0u: no row r)
shared uint SOURCE[WORKGROUP_SIZE];      // its first unit in DENSE
shared bool WINS[WORKGROUP_SIZE];

void main() {
    uint r = gl_LocalInvocationID.x;
    uint rows = PW(P_TOTAL);
    uint target = ~0u;
    if (r < rows) {
        Offsets o = map_offsets(r);
        target = o.data;                 // (FLAG_DROP: NO_OFFSET, ~0u, for a row out of range)
        SOURCE[r] = o.dense;
    }
    TARGET[r] = target;
    barrier();
    bool wins = r < rows && target != NO_OFFSET;
    for (uint j = r + 1u; wins && j < rows; ++j)
        wins = TARGET[j] != target;
    WINS[r] = wins;
    barrier();
    uint units = PW(P_ROW_UNITS), total = rows * units, step = gl_NumWorkGroups.x * WORKGROUP_SIZE;
    for (uint f = gl_GlobalInvocationID.x; f < total;) {
        uint j = f / units, c = f - j * units;
        if (WINS[j])
            STORE_UNIT(DATA, TARGET[j] + c, LOAD_UNIT(DENSE, SOURCE[j] + c));
        if (total - f <= step)
            break;              // f + step would reach or pass total (or wrap)
        f += step;
    }
}
#elif UNIQUE
void process(OFF_T i) {
    Offsets o = map_offsets(i);
    if (o.data != NO_OFFSET)
        STORE_UNIT(DATA, o.data, LOAD_UNIT(DENSE, o.dense));
}
#elif ROWS
const uint P_OWNER_SHIFT = P_END;

void process(uint i) {
    Position p = locate(i);
    uint data = data_offset(p);
    if (data == NO_OFFSET)
        return;
    if (OWNER[(data - p.inner) >> PW(P_OWNER_SHIFT)] == i - p.inner + 1u)
        STORE_UNIT(DATA, data, LOAD_UNIT(DENSE, p.dense));
}
#else
void process(OFF_T i) {
    Offsets o = map_offsets(i);
    if (o.data == NO_OFFSET)
        return;
    if (WORD_AT(OWNER, o.data) == uint(i) + 1u) {
        STORE_UNIT(DATA, o.data, LOAD_UNIT(DENSE, o.dense));
        WORD_AT(OWNER, o.data) = 0u;
    }
}
#endif
#if !SMALL && !CLEARS
#include "grid_loop.glsl"
#endif
