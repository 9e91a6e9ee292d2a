// The workgroup size of every kernel: WORKGROUP_SIZE, a specialization constant (dmlgpu/kernels/table.py's
// SPEC_CONSTANTS, which gives its id as WORKGROUP_SIZE_ID), the same as local_size_x.
#ifndef WORKGROUP_GLSL
#define WORKGROUP_GLSL
layout(local_size_x_id = WORKGROUP_SIZE_ID) in;
layout(constant_id = WORKGROUP_SIZE_ID) const uint WORKGROUP_SIZE = 1u;
#endif
