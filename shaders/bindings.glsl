// The buffers every kernel is given, in this order (dmlgpu/runtime.py binds them so):
// 0 params, 1 indices, 2 data tensor, 3 dense tensor, 4 owner scratch (scatter only); the FEW scatter passes
// (at most 4 storage buffers) bind fewer: scatter_claim.comp's and scatter_write.comp's comments say which.
#include "workgroup.glsl"
#if WIDE
layout(std430, binding = 0) restrict readonly buffer Params { uint64_t P[]; };  // index_map.glsl's words
#else
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
#endif
#if NO_INDICES       // a pass that reads no index (scatter_write.comp's FEW): no binding; never read
#if IDX64
uvec2 IDX[1];
#else
uint IDX[1];
#endif
#elif IDX64
layout(std430, binding = 1) restrict readonly buffer Indices { uvec2 IDX[]; };  // one 64-bit load per index
#else
layout(std430, binding = 1) restrict readonly buffer Indices { uint IDX[]; };
#endif
