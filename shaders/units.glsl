// Element access in units of UNIT bytes (1, 2, 4, 8 or 16), over buffers of 32-bit words.
// 1- and 2-byte units are packed in words: reads shift and mask; writes touch only their own bits with
// atomicAnd/atomicOr, so threads writing neighbouring units of one word never lose each other's writes.
// UNIT_AT(ARR, off) is unit ``off`` of tensor ARR, WORD_AT(ARR, w) its 32-bit word ``w`` (lvalues): through its
// binding, or its blocks' device addresses in WIDE and ADDR variants (addressing.glsl).
#include "addressing.glsl"

#if UNIT == 16
#define UNIT_T uvec4
#elif UNIT == 8
#define UNIT_T uvec2
#else
#define UNIT_T uint
#endif

#if ADDRESSED
layout(buffer_reference, std430, buffer_reference_align = UNIT) buffer UnitRef { UNIT_T v; };
#define UNIT_AT(ARR, off) UnitRef(address(SLOT_##ARR, uint64_t(off) * UNIT)).v
#define WORD_AT(ARR, w) WordRef(address(SLOT_##ARR, uint64_t(w) * 4u)).v
#else
#define UNIT_AT(ARR, off) ARR[off]
#define WORD_AT(ARR, w) ARR[w]
#endif

// LOAD_UNIT_ATOMIC: the same read as LOAD_UNIT, but of 1- and 2-byte units by an atomic read of their word, for
// words whose other units other invocations write (STORE_UNIT) at the same time.
#if UNIT >= 4
#define LOAD_UNIT(ARR, off) UNIT_AT(ARR, off)
#define LOAD_UNIT_ATOMIC(ARR, off) UNIT_AT(ARR, off)
#define STORE_UNIT(ARR, off, v) UNIT_AT(ARR, off) = (v)
#else
const uint UNIT_MASK = (1u << (8u * UNIT)) - 1u;
#define LOAD_UNIT(ARR, off) ((WORD_AT(ARR, ((off) * UNIT) >> 2u) >> (uint(((off) * UNIT) & 3u) * 8u)) & UNIT_MASK)
#define LOAD_UNIT_ATOMIC(ARR, off) \
    ((atomicOr(WORD_AT(ARR, ((off) * UNIT) >> 2u), 0u) >> (uint(((off) * UNIT) & 3u) * 8u)) & UNIT_MASK)
#define STORE_UNIT(ARR, off, v) { \
    OFF_T b_ = (off) * UNIT; uint sh_ = uint(b_ & 3u) * 8u; \
    atomicAnd(WORD_AT(ARR, b_ >> 2u), ~(UNIT_MASK << sh_)); \
    atomicOr(WORD_AT(ARR, b_ >> 2u), (v) << sh_); }
#endif
