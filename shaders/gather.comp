#version 450
#extension GL_GOOGLE_include_directive : require
// dense[i] = data[map(i)]: every gather, and the strided copy (tuple size 0).
#include "units.glsl"
#include "bindings.glsl"
layout(std430, binding = 2) readonly buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) buffer Dense { UNIT_T DENSE[]; };
#include "index_map.glsl"

void process(uint i) {
    Offsets o = map_offsets(i);
    STORE_UNIT(DENSE, o.dense, LOAD_UNIT(DATA, o.data));
}
#include "grid_loop.glsl"
