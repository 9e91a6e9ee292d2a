// The workgroup size of every kernel, written once (dmlgpu/kernels.py's WORKGROUP_SIZE mirrors it).
#define WORKGROUP_SIZE 256
layout(local_size_x = WORKGROUP_SIZE) in;
