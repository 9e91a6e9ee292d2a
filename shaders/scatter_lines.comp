#version 450
#extension GL_GOOGLE_include_directive : require
// SCATTER_ELEMENTS in one pass, claims in shared memory (dmlgpu/plans/plan.py's ScatterLinesPlan). Two updates
// can only target the same output element when they lie on one *line*: the same coordinates but along the
// axis. So a workgroup takes PW(P_LINE_GROUP) whole lines at a time: it zeroes a claim word per output
// element of its lines (PW(P_LINE_N) per line) in shared memory, each update claims its target with
// atomicMax(its position along the axis + 1), and after a barrier each update that holds its target's claim
// writes it: the update last in row-major order wins, as in scatter_claim.comp + scatter_write.comp, with
// no claim traffic to memory. The output holds the input's copy before this pass (the runtime's barrier).
// Parameters: index_map.glsl's words describe the lines (iteration over the dimensions but the axis: dense
// = updates, data = output, index = indices offsets of a line's first update; P_TOTAL lines), then
// P_LINE_* (below). Bindings as bindings.glsl: 2 output, 3 updates.
// COPY (4-byte units; dmlgpu/plans/scatter_lines.py says where): the lines are the output's innermost dimension, one
// after the other (line i is the output's elements [i n, (i + 1) n)), and the output has the input's packed layout
// (binding 4). No copy comes before this pass: each invocation loads its share of the group's input elements
// first; after the claims, each update that holds its target's claim puts its value beside the claim in shared
// memory, and the group's output elements are written once, in order and coalesced: the claimed update's value,
// else the input's element. Its claims take half the shared words.
#extension GL_EXT_control_flow_attributes : require
#include "units.glsl"
#define PARAMS_OWN 8u            // the P_LINE_* words below (in a uniform buffer: kernels/table.py's PARAMS_UNIFORM)
#include "bindings.glsl"
layout(std430, binding = 2) restrict buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) restrict readonly buffer Dense { UNIT_T DENSE[]; };
#if COPY
#if UNIT != 4
#error "COPY moves 4-byte units"
#endif
layout(std430, binding = 4) restrict readonly buffer Input { UNIT_T INPUT[]; };
#define CLAIMS (CLAIM_WORDS / 2)
shared uint s_value[CLAIMS];             // the winning update's value of each claimed element
#else
#define CLAIMS CLAIM_WORDS
#endif
#include "index_map.glsl"
const uint P_LINE_M = P_END;             // updates per line (along the axis)
const uint P_LINE_DENSE = P_END + 1u;    // updates stride along the axis
const uint P_LINE_INDEX = P_END + 2u;    // indices stride along the axis
const uint P_LINE_N = P_END + 3u;        // output elements per line (the axis' size in the output)
const uint P_LINE_DATA = P_END + 4u;     // output stride along the axis
const uint P_LINE_GROUP = P_END + 5u;    // lines per workgroup at a time (P_LINE_GROUP * P_LINE_N <= CLAIMS)
const uint P_LINE_MAGIC = P_END + 6u;    // divide() by P_LINE_M (when it is 2 or more) ...
const uint P_LINE_SHIFT = P_END + 7u;    // ... and its shift
shared uint s_claim[CLAIMS];

// Update j of the group's lines starting at line ``first``: (its line within the group, its position along
// the axis, its line's offsets, its target's position along the axis).
void item(uint first, uint j, uint m, out uint l, out uint a, out Position p, out uint target) {
    l = m == 1u ? j : divide(j, PW(P_LINE_MAGIC), PW(P_LINE_SHIFT));
    a = j - l * m;
    p = locate(first + l);
    bool missed = false;       // (never FLAG_DROP: plans/scatter_lines.py)
    target = read_index(p.index + a * PW(P_LINE_INDEX), PW(P_LINE_N), (PW(P_FLAGS) & FLAG_SIGNED) != 0u, missed);
}

void main() {
    uint t = gl_LocalInvocationID.x, lines = PW(P_TOTAL), group = PW(P_LINE_GROUP);
    uint m = PW(P_LINE_M), n = PW(P_LINE_N);
    uint step = gl_NumWorkGroups.x * group;
    for (uint first = gl_WorkGroupID.x * group; first < lines;) {
        uint here = min(group, lines - first), count = here * m;
        for (uint j = t; j < here * n; j += WORKGROUP_SIZE)
            s_claim[j] = 0u;
#if COPY
        uint base = first * n;                   // the group's first output element
        UNIT_T kept[CLAIMS / WORKGROUP_SIZE];    // the input's elements, loaded before the claims (1.5-1.7x as
                                                 // fast as after them on an H200)
        [[unroll]] for (uint k = 0u; k < CLAIMS / WORKGROUP_SIZE; ++k) {
            uint j = t + k * WORKGROUP_SIZE;
            if (j < here * n)
                kept[k] = INPUT[base + j];
        }
#endif
        // The first LINE_ITEMS updates of an invocation (all of them where the plan's group allows: count
        // <= LINE_ITEMS * WORKGROUP_SIZE unless one line is longer) keep their claim slot, claim, target
        // offset and value from the claiming loop to the writing one; the others are decoded again. Their
        // loads are issued before the barrier that ends the zeroing of the claims, their claims after it.
        uint slot[LINE_ITEMS], claim[LINE_ITEMS], at[LINE_ITEMS];
        UNIT_T value[LINE_ITEMS];
        [[unroll]] for (uint k = 0u; k < LINE_ITEMS; ++k) {
            uint j = t + k * WORKGROUP_SIZE, l, a, target;
            Position p;
            claim[k] = 0u;
            if (j < count) {
                item(first, j, m, l, a, p, target);
                slot[k] = l * n + target;
                claim[k] = a + 1u;
                at[k] = p.data + target * PW(P_LINE_DATA);
                value[k] = LOAD_UNIT(DENSE, p.dense + a * PW(P_LINE_DENSE));
            }
        }
        barrier();
        [[unroll]] for (uint k = 0u; k < LINE_ITEMS; ++k) {
            if (claim[k] != 0u)
                atomicMax(s_claim[slot[k]], claim[k]);
        }
        for (uint j = t + LINE_ITEMS * WORKGROUP_SIZE; j < count; j += WORKGROUP_SIZE) {
            uint l, a, target;
            Position p;
            item(first, j, m, l, a, p, target);
            atomicMax(s_claim[l * n + target], a + 1u);
        }
        barrier();
#if COPY
        [[unroll]] for (uint k = 0u; k < LINE_ITEMS; ++k) {
            if (claim[k] != 0u && s_claim[slot[k]] == claim[k])
                s_value[slot[k]] = value[k];
        }
        for (uint j = t + LINE_ITEMS * WORKGROUP_SIZE; j < count; j += WORKGROUP_SIZE) {
            uint l, a, target;
            Position p;
            item(first, j, m, l, a, p, target);
            if (s_claim[l * n + target] == a + 1u)
                s_value[l * n + target] = LOAD_UNIT(DENSE, p.dense + a * PW(P_LINE_DENSE));
        }
        barrier();
        [[unroll]] for (uint k = 0u; k < CLAIMS / WORKGROUP_SIZE; ++k) {
            uint j = t + k * WORKGROUP_SIZE;
            if (j < here * n)
                DATA[base + j] = s_claim[j] != 0u ? s_value[j] : kept[k];
        }
#else
        [[unroll]] for (uint k = 0u; k < LINE_ITEMS; ++k) {
            if (claim[k] != 0u && s_claim[slot[k]] == claim[k])
                STORE_UNIT(DATA, at[k], value[k]);
        }
        for (uint j = t + LINE_ITEMS * WORKGROUP_SIZE; j < count; j += WORKGROUP_SIZE) {
            uint l, a, target;
            Position p;
            item(first, j, m, l, a, p, target);
            if (s_claim[l * n + target] == a + 1u)
                STORE_UNIT(DATA, p.data + target * PW(P_LINE_DATA), LOAD_UNIT(DENSE, p.dense + a * PW(P_LINE_DENSE)));
        }
#endif
        barrier();                               // the claims are read before the next lines zero them
        if (lines - first <= step)
            break;                               // first + step would reach or pass lines (or wrap)
        first += step;
    }
}
