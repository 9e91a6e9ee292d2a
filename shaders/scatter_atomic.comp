#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction by 32-bit atomics (dmlgpu/plans/reduction.py), for the operations whose result cannot depend
// on the order of the updates: integer add (wrapping), min and max. Iteration i is update element i of the
// scatter's index map (the plain scatter's); it combines straight into its target.
//   OP add, min or max (reduce_op.glsl); SIGNED 0/1 (min and max compare as signed integers)
#define UNIT 4
#include "units.glsl"
#include "bindings.glsl"
#include "reduce_op.glsl"
#if SIGNED
#define VALUE_T int
#define VALUE_AT(ARR, off) INT_AT(ARR, off)
#else
#define VALUE_T uint
#define VALUE_AT(ARR, off) WORD_AT(ARR, off)
#endif
#if WIDE
#define INT_AT(ARR, off) IntRef(address(SLOT_##ARR, uint64_t(off) * 4u)).v
#else
#define INT_AT(ARR, off) ARR[off]
#endif
layout(std430, binding = 2) restrict buffer Data { VALUE_T DATA[]; };
layout(std430, binding = 3) restrict readonly buffer Dense { VALUE_T DENSE[]; };
#include "index_map.glsl"
void process(OFF_T i) {
    Offsets o = map_offsets(i);
    if (OP == OP_ADD)
        atomicAdd(VALUE_AT(DATA, o.data), VALUE_AT(DENSE, o.dense));
    else if (OP == OP_MIN)
        atomicMin(VALUE_AT(DATA, o.data), VALUE_AT(DENSE, o.dense));
    else
        atomicMax(VALUE_AT(DATA, o.data), VALUE_AT(DENSE, o.dense));
}
#include "grid_loop.glsl"
