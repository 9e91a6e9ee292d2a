#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter, pass 2 (after a barrier): the winning update of each target writes it and clears its claim.
// A losing update reads the winner's claim or 0, never its own, so it writes nothing.
#include "units.glsl"
#include "bindings.glsl"
layout(std430, binding = 2) restrict buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) restrict readonly buffer Dense { UNIT_T DENSE[]; };
layout(std430, binding = 4) restrict buffer Owner { uint OWNER[]; };
#include "index_map.glsl"

void process(OFF_T i) {
    Offsets o = map_offsets(i);
    if (WORD_AT(OWNER, o.data) == uint(i) + 1u) {
        STORE_UNIT(DATA, o.data, LOAD_UNIT(DENSE, o.dense));
        WORD_AT(OWNER, o.data) = 0u;
    }
}
#include "grid_loop.glsl"
