#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter, pass 1: each update claims its target; the update latest in row-major order wins
// (OWNER[target] = max(i + 1)). OWNER is all zeros before this pass; scatter_write.comp restores that.
#include "units.glsl"
#include "bindings.glsl"
layout(std430, binding = 4) buffer Owner { uint OWNER[]; };
#include "index_map.glsl"

void process(OFF_T i) {
    atomicMax(WORD_AT(OWNER, map_offsets(i).data), uint(i) + 1u);   // the host keeps counts under 2^32 - 1
}
#include "grid_loop.glsl"
