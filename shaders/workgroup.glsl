// The workgroup size of every kernel: WORKGROUP_SIZE, a define that the variant table (dmlgpu/kernels.py)
// gives every variant.
#ifndef WORKGROUP_SIZE
#error "WORKGROUP_SIZE is defined by the variant table (dmlgpu/kernels.py)"
#endif
#ifndef WORKGROUP_GLSL
#define WORKGROUP_GLSL
layout(local_size_x = WORKGROUP_SIZE) in;
#endif
