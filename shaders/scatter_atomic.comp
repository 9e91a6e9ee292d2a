#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction by 32-bit atomics (dmlgpu/reduction.py), for the operations whose result cannot depend
// on the order of the updates: integer add (wrapping), min and max. Iteration i is update element i of the
// scatter's index map (the plain scatter's); it combines straight into its target.
//   OP 0 add, 2 min, 3 max (arith.glsl's codes); SIGNED 0/1 (min and max compare as signed integers)
#define UNIT 4
#include "units.glsl"
#include "bindings.glsl"
#if SIGNED
#define VALUE_T int
#else
#define VALUE_T uint
#endif
layout(std430, binding = 2) restrict buffer Data { VALUE_T DATA[]; };
layout(std430, binding = 3) restrict readonly buffer Dense { VALUE_T DENSE[]; };
#include "index_map.glsl"
void process(uint i) {
    Offsets o = map_offsets(i);
#if OP == 0
    atomicAdd(DATA[o.data], DENSE[o.dense]);
#elif OP == 2
    atomicMin(DATA[o.data], DENSE[o.dense]);
#else
    atomicMax(DATA[o.data], DENSE[o.dense]);
#endif
}
#include "grid_loop.glsl"
