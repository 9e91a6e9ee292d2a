// The buffers every kernel is given, in this order (dmlgpu/runtime.py binds them so):
// 0 params, 1 indices, 2 data tensor, 3 dense tensor, 4 owner scratch (scatter only); the FEW scatter passes
// (at most 4 storage buffers) bind fewer: scatter_claim.comp's and scatter_write.comp's comments say which.
#include "workgroup.glsl"
// PW(i): parameter word i. PARAMS_UNIFORM (gather.comp's 32-bit variants, whose parameters are the index map's
// words alone, scatter_lines.comp, PARAMS_OWN words more, and gather.comp's ADDR and WIDE run variants, with
// their block lists: UNIFORM_WORDS words): a uniform buffer, declared by index_map.glsl, which GPUs read
// through their constant caches; else a storage buffer.
#if WIDE && !PARAMS_UNIFORM
layout(std430, binding = 0) restrict readonly buffer Params { uint64_t P[]; };  // index_map.glsl's words
#define PW(i) P[i]
#elif !PARAMS_UNIFORM
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
#define PW(i) P[i]
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
