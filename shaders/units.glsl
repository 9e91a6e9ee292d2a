// Element access in units of UNIT bytes (1, 2, 4, 8 or 16), over buffers of 32-bit words.
// 1- and 2-byte units are packed in words: reads shift and mask; writes touch only their own bits with
// atomicAnd/atomicOr, so threads writing neighbouring units of one word never lose each other's writes.
#if UNIT == 16
#define UNIT_T uvec4
#elif UNIT == 8
#define UNIT_T uvec2
#else
#define UNIT_T uint
#endif

#if UNIT >= 4
#define LOAD_UNIT(ARR, off) ARR[off]
#define STORE_UNIT(ARR, off, v) ARR[off] = (v)
#else
const uint UNIT_MASK = (1u << (8u * UNIT)) - 1u;
#define LOAD_UNIT(ARR, off) ((ARR[((off) * UNIT) >> 2u] >> ((((off) * UNIT) & 3u) * 8u)) & UNIT_MASK)
#define STORE_UNIT(ARR, off, v) { \
    uint b_ = (off) * UNIT; uint sh_ = (b_ & 3u) * 8u; \
    atomicAnd(ARR[b_ >> 2u], ~(UNIT_MASK << sh_)); \
    atomicOr(ARR[b_ >> 2u], (v) << sh_); }
#endif
