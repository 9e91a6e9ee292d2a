// Element access in units of UNIT bytes (1, 2, 4, 8 or 16), over buffers of 32-bit words.
// 1- and 2-byte units are packed in words: reads shift and mask; writes touch only their own bits with
// atomicAnd/atomicOr, so threads writing neighbouring units of one word never lose each other's writes.
//
// WIDE (0/1): the large-tensor variants. Offsets and iteration counts are 64-bit (OFF_T), and the tensors
// are reached through device addresses, not bindings: tensor SLOT_<name> (IDX, DATA, DENSE, OWNER) is held
// in blocks of 2^shift bytes whose addresses the parameter block lists (bindings.glsl's address()), so a
// tensor may be larger than one binding (maxStorageBufferRange) and than 4 GiB. A unit never straddles two
// blocks (blocks are powers of two of at least 256 bytes); a row may. Needs shaderInt64, bufferDeviceAddress.
// UNIT_AT(ARR, off) is unit ``off`` of tensor ARR, WORD_AT(ARR, w) its 32-bit word ``w`` (lvalues).
#if WIDE
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_buffer_reference : require
#define OFF_T uint64_t
#else
#define OFF_T uint
#endif

#if UNIT == 16
#define UNIT_T uvec4
#elif UNIT == 8
#define UNIT_T uvec2
#else
#define UNIT_T uint
#endif

#if WIDE
layout(buffer_reference, std430, buffer_reference_align = UNIT) buffer UnitRef { UNIT_T v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer WordRef { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer IntRef { int v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Word64Ref { uint64_t v; };
const uint SLOT_IDX = 0u, SLOT_DATA = 1u, SLOT_DENSE = 2u, SLOT_OWNER = 3u;
#define UNIT_AT(ARR, off) UnitRef(address(SLOT_##ARR, uint64_t(off) * UNIT)).v
#define WORD_AT(ARR, w) WordRef(address(SLOT_##ARR, uint64_t(w) * 4u)).v
#else
#define UNIT_AT(ARR, off) ARR[off]
#define WORD_AT(ARR, w) ARR[w]
#endif

#if UNIT >= 4
#define LOAD_UNIT(ARR, off) UNIT_AT(ARR, off)
#define STORE_UNIT(ARR, off, v) UNIT_AT(ARR, off) = (v)
#else
const uint UNIT_MASK = (1u << (8u * UNIT)) - 1u;
#define LOAD_UNIT(ARR, off) ((WORD_AT(ARR, ((off) * UNIT) >> 2u) >> (uint(((off) * UNIT) & 3u) * 8u)) & UNIT_MASK)
#define STORE_UNIT(ARR, off, v) { \
    OFF_T b_ = (off) * UNIT; uint sh_ = uint(b_ & 3u) * 8u; \
    atomicAnd(WORD_AT(ARR, b_ >> 2u), ~(UNIT_MASK << sh_)); \
    atomicOr(WORD_AT(ARR, b_ >> 2u), (v) << sh_); }
#endif
