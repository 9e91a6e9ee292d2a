#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
#if STAGE == 2
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// Scatter reduction min and max of elements of at most 4 bytes by 64-bit atomics, without a sort
// (dmlgpu/plans/reduction.py, step 7): the sequential fold's result (arith.glsl: the first NaN of the sequence, the
// output's value first, its bits unchanged; else the least (greatest) value in order_key's total order, -0 < +0)
// does not depend on the order of the updates but through "first", which a slot per output element settles:
// a 64-bit word compared as an integer, the least wins (atomicMin):
//   tier 0 (high word 0): the output's value is a NaN (include_self): it stays
//   tier 1 (high word 1, low word the update element's iteration number, row-major): the first NaN update
//   tier 2 (high word 2, low word order_key, inverted for max): the least (greatest) value
//   NO_SLOT (all ones): no value yet (include_self=False)
// STAGE 1: each output element's slot from its value (over offsets 0 .. P_TOTAL - 1 of the output, after the
// copy of the input); 2: each update element combines into its target's slot (the scatter's index map): those
// of a subgroup whose target is its first active invocation's combine first (subgroup min, one atomic: a target
// that many updates share, as with skewed indices, takes few atomics; any grouping gives the same slot);
// 3: each output element whose slot changed takes the value it names (race-free sub-word stores).
// Bindings: 0 parameters, 1 indices, 2 output, 3 updates, 4 slots. ELEM_KIND, ELEM_BYTES, OP as arith.glsl.
#define UNIT ELEM_BYTES
#include "units.glsl"
#include "bindings.glsl"
layout(std430, binding = 2) restrict buffer Data { UNIT_T DATA[]; };
#if STAGE != 1
layout(std430, binding = 3) restrict readonly buffer Dense { UNIT_T DENSE[]; };
#endif
layout(std430, binding = 4) restrict buffer Slots { uint64_t SLOTS[]; };
#include "index_map.glsl"
#include "arith.glsl"
const uint P_MINMAX_MODE = P_END;   // MODE_EXCLUDE_SELF (reduction.py): include_self=False
const uint64_t NO_SLOT = ~uint64_t(0u);

uint key(uint v) { return OP == OP_MIN ? order_key(v) : ~order_key(v) & ALL_BITS; }

uint64_t slot_of(uint v) {          // an output value's slot before any update
    if ((PW(P_MINMAX_MODE) & 1u) != 0u)
        return NO_SLOT;
    return is_nan(v) ? uint64_t(0u) : (uint64_t(2u) << 32u) | key(v);
}

void process(OFF_T i) {
#if STAGE == 1
    SLOTS[i] = slot_of(LOAD_UNIT(DATA, i));
#elif STAGE == 2
    Offsets o = map_offsets(i);
    uint u = LOAD_UNIT(DENSE, o.dense), target = uint(o.data);
    uint high = is_nan(u) ? 1u : 2u, low = is_nan(u) ? uint(i) : key(u);
    if (target == subgroupBroadcastFirst(target)) {
        uint least_high = subgroupMin(high);
        uint least_low = subgroupMin(high == least_high ? low : 0xFFFFFFFFu);
        if (subgroupElect())
            atomicMin(SLOTS[target], (uint64_t(least_high) << 32u) | least_low);
    } else {
        atomicMin(SLOTS[target], (uint64_t(high) << 32u) | low);
    }
#else
    uint64_t s = SLOTS[i];
    if (s != slot_of(LOAD_UNIT(DATA, i))) {
        uint low = uint(s & 0xFFFFFFFFu);
        uint v = uint(s >> 32u) == 1u ? LOAD_UNIT(DENSE, map_offsets(low).dense)
                                      : order_unkey(OP == OP_MIN ? low : ~low & ALL_BITS);
        STORE_UNIT(DATA, i, v);
    }
#endif
}
#include "grid_loop.glsl"
