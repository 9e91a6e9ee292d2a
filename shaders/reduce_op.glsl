// OP, a scatter reduction's operation (OP_ADD, OP_MUL, OP_MIN, OP_MAX: kernels.REDUCE_OPS' order), and MEAN (the
// float add variants of reduction "mean"): specialization constants (dmlgpu/kernels/table.py's SPEC_CONSTANTS, which
// gives their ids), tested in code, never by the preprocessor.
#ifndef REDUCE_OP_GLSL
#define REDUCE_OP_GLSL
#define OP_ADD 0u
#define OP_MUL 1u
#define OP_MIN 2u
#define OP_MAX 3u
layout(constant_id = OP_ID) const uint OP = 0u;
layout(constant_id = MEAN_ID) const uint MEAN = 0u;
#endif
