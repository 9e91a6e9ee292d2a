// The buffers every kernel is given, in this order (dmlgpu/runtime.py binds them so):
// 0 params, 1 indices, 2 data tensor, 3 dense tensor, 4 owner scratch (scatter only).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Params { uint P[]; };
layout(std430, binding = 1) readonly buffer Indices { uint IDX[]; };
