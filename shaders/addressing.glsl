// How a kernel reaches its tensors. By default through their bindings, with 32-bit offsets (OFF_T uint).
// WIDE (0/1: the large-tensor variants of the index-map kernels): 64-bit offsets and iteration counts (OFF_T
// uint64_t), and the tensors reached through device addresses. ADDR (0/1: the scatter reduction kernels'
// variants for tensors held in several blocks): 32-bit offsets, the tensors reached through device addresses.
// Either way (ADDRESSED), tensor SLOT_<name> (IDX, DATA, DENSE, OWNER: the binding order of bindings.glsl) is
// held in blocks of 2^shift bytes whose device addresses the parameter block lists (index_map.glsl's
// address(), written by dmlgpu/runtime/device.py's _block_table), so it may be larger than one binding
// (maxStorageBufferRange) and than 4 GiB. A unit never straddles two blocks (blocks are powers of two of at
// least 256 bytes); a row may. Needs shaderInt64 and bufferDeviceAddress (kernels.WIDE_FEATURES).
#ifndef ADDRESSING_GLSL
#define ADDRESSING_GLSL
#if WIDE || ADDR
#define ADDRESSED 1
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_buffer_reference : require
layout(buffer_reference, std430, buffer_reference_align = 4) buffer WordRef { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer IntRef { int v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Word64Ref { uint64_t v; };
const uint SLOT_IDX = 0u, SLOT_DATA = 1u, SLOT_DENSE = 2u, SLOT_OWNER = 3u;
#else
#define ADDRESSED 0
#endif
#if WIDE
#define OFF_T uint64_t
#else
#define OFF_T uint
#endif
#endif
