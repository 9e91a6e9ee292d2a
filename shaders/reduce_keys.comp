#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction, step 1 (dmlgpu/reduction.py): for update row r (row-major), its target's output
// offset (index_map.glsl over the rows: indices read, wrapped and clamped) and its updates offset:
//   KEYS[r] = target offset >> P[P_KEY_SHIFT] (the low bits every target offset has at zero)
//   ROWS[r] = updates offset of row r
// Bindings as bindings.glsl, with KEYS and ROWS in place of the data and dense tensors.
#include "bindings.glsl"
layout(std430, binding = 2) restrict writeonly buffer Keys { uint KEYS[]; };
layout(std430, binding = 3) restrict writeonly buffer Rows { uint ROWS[]; };
#include "index_map.glsl"
const uint P_KEY_SHIFT = P_END;
void process(uint r) {
    Offsets o = map_offsets(r);
    KEYS[r] = o.data >> P[P_KEY_SHIFT];
    ROWS[r] = o.dense;
}
#include "grid_loop.glsl"
