// The index machinery shared by every kernel: decode a linear id over the iteration space, apply the
// strides of the three tensors, read each index of the tuple (32- or 64-bit, signed or not), wrap negative
// indices, clamp, and add the indexed coordinates. Host side: dmlgpu/plans/index_map.py (same word layout and names,
// checked by tests/test_kernels.py).
//
// Terms: the iteration space is the "dense" tensor's shape (gather: output; scatter: updates);
// the "data" tensor is the one addressed through the indices (gather: input; scatter: output).
// All offsets are in units of UNIT bytes; index offsets in index elements. An index out of range resolves by
// the mode's flags (FLAG_WRAP, FLAG_CLIP, else clamp), or makes its tuple's data offset NO_OFFSET (FLAG_FILL,
// FLAG_DROP).
//
// Needs: IDX64 (0/1), WIDE (0/1: units.glsl), and the parameter words PW(i) (bindings.glsl: uint64_t when WIDE, else uint)
// and IDX[] (indices: uvec2[] when IDX64, else uint[]; reached through its block addresses when WIDE).

#include "addressing.glsl"  // OFF_T: offsets and iteration numbers (uint64_t in WIDE variants)

const uint P_RANK = 0u;     // iteration dimensions after folding, 0..8
const uint P_TOTAL = 1u;    // iterations of the kernel's loop (units of the dense tensor, or groups or rows of them)
const uint P_K = 2u;        // index tuple size, 0..8 (0: plain strided copy)
const uint P_FLAGS = 3u;    // FLAG_* bits
const uint P_TSTRIDE = 4u;  // distance between the components of one index tuple, in index elements
const uint P_UNITS = 5u;    // units of the dense tensor
const uint P_STATUS = 6u;   // FLAG_RAISE: the word of the report (gather.comp's STATUS: the dense tensor's buffer)
const uint P_SHAPE = 8u;    // [8] iteration sizes
const uint P_DENSE = 16u;   // [8] dense-tensor strides
const uint P_DATA = 24u;    // [8] data-tensor strides of the directly mapped dimensions
const uint P_INDEX = 32u;   // [8] index-tensor strides
const uint P_TDIM = 40u;    // [8] size of the data dimension each tuple component indexes
const uint P_TDATA = 48u;   // [8] data-tensor stride of that dimension
const uint P_MAGIC = 56u;   // [8] magic multiplier of iteration size d (sizes are >= 2 after folding) ...
const uint P_SHIFT = 64u;   // [8] ... and its shift l = ceil(log2(size)): see divide()
const uint P_FILL = 72u;    // [4] FLAG_FILL: the unit a tuple out of range reads, as 32-bit words (little-endian;
                            // the fill value's bytes repeated over the unit; the low bits of each word in WIDE)
const uint P_END = 76u;     // kernels with parameters of their own put them from here on
#if PARAMS_UNIFORM          // (bindings.glsl) UNIFORM_WORDS 32-bit words in a uniform buffer, std140: 4 to a uvec4
#ifndef UNIFORM_WORDS       // (a define where the words vary in number: the ADDR and WIDE run variants' block lists)
#ifndef PARAMS_OWN
#define PARAMS_OWN 0u       // the kernel's own words after P_END (a multiple of 4), defined before this include
#endif
#define UNIFORM_WORDS (P_END + PARAMS_OWN)
#endif
layout(std140, binding = 0) uniform Params { uvec4 P4[UNIFORM_WORDS / 4u]; };
#if WIDE                    // 64-bit word i: 32-bit words 2i (low half) and 2i + 1
#define PW(i) (uint64_t(P4[(i) >> 1u][2u * ((i) & 1u)]) | (uint64_t(P4[(i) >> 1u][2u * ((i) & 1u) + 1u]) << 32u))
#else
#define PW(i) P4[(i) >> 2u][(i) & 3u]
#endif
#endif
const uint P_BLOCKS = P_END; // WIDE: the tensors' block lists, 64-bit words (see address())
const uint P_ADDR = P_END + 8u; // ADDR: the same as pairs of 32-bit words (little-endian), after the reduction
                                // kernels' own words (dmlgpu/plans/reduction.py's EXTRA_WORDS)
const uint FLAG_SIGNED = 1u;  // indices are of a signed type
const uint FLAG_ROWS = 4u;    // gather moving whole rows of the innermost dimension, one per iteration
const uint FLAG_WRAP = 8u;    // NumPy's mode="wrap": an index is taken modulo its dimension's size
const uint FLAG_CLIP = 16u;   // NumPy's mode="clip": negative indices become 0, those past the end dim - 1
                              // (neither: DirectML's clamp: negative ones count from the end once, then clamp)
const uint FLAG_RAISE = 32u;  // mode="raise" checked in the kernel (one that defines INDEX_REPORT(pos)): resolved
                              // as clamp, and each index outside [-dim, dim) (signed) or [0, dim) reported by
                              // its position in the index tensor (plans/index_check.py)
const uint FLAG_FILL = 64u;   // mode="fill" (gathers): a tuple with any index outside [-dim, dim) (signed) or
                              // [0, dim) (unsigned) has no data offset (data_offset: NO_OFFSET); the gather
                              // writes the unit of words P_FILL there
const uint FLAG_DROP = 128u;  // mode="drop" (scatters): the same test; the scatter skips such an update
const uint FLAG_SPARE = 256u; // with FLAG_DROP (the scatter reductions): such a tuple's data offset is that of index
                              // dim in its first component and 0 in the others, past the data's first indexed
                              // dimension: a spare slice of a scratch output (plans/reduction.py's Dropping)

// i / n for 2 <= n < 2^32 without a division instruction (Granlund-Montgomery): m = 2^32 (2^l - n) / n + 1.
uint divide(uint i, uint m, uint l) {
    uint hi, lo;
    umulExtended(m, i, hi, lo);
    return (hi + ((i - hi) >> 1u)) >> (l - 1u);
}

#if ADDRESSED
// The block lists: entry 2 slot of a tensor slot (addressing.glsl's SLOT_*) is the log2 of its block size in
// bytes (63: one block), entry 2 slot + 1 the entry where the device addresses of its blocks start.
#if WIDE
#define BLOCK_HEAD P_BLOCKS                // entries are P's own 64-bit words
uint64_t block_entry(uint64_t e) {
    return PW(uint(e));
}
#elif defined(WIDE_LISTS)
// WIDE_LISTS (gather.comp's ADDR variants): the block lists laid out as in the WIDE variants, from 64-bit word
// P_ADDR / 2 of the parameters (P_ADDR is even), their entries counted in 64-bit words from the start, read as
// pairs of P's words (plan.addr_params: so that a call template remakes them as it does the WIDE ones')
#define BLOCK_HEAD (P_ADDR / 2u)
uint64_t block_entry(uint64_t e) {
    uint k = 2u * uint(e);
    return uint64_t(PW(k)) | (uint64_t(PW(k + 1u)) << 32u);
}
#else
#define BLOCK_HEAD 0u                      // entries are pairs of P's words from P_ADDR
uint64_t block_entry(uint64_t e) {
    uint k = P_ADDR + 2u * uint(e);
    return uint64_t(PW(k)) | (uint64_t(PW(k + 1u)) << 32u);
}
#endif

// The device address of byte ``at`` of the tensor in ``slot``.
uint64_t address(uint slot, uint64_t at) {
    uint64_t shift = block_entry(BLOCK_HEAD + 2u * slot);
    return block_entry(block_entry(BLOCK_HEAD + 2u * slot + 1u) + (at >> shift)) +
           (at & ((uint64_t(1) << shift) - 1u));
}

// The log2 of the block size in bytes of the tensor in ``slot``; 32 or more (63) when it is held in one block,
// which its binding then is (a kernel may reach it through the binding, as the 32-bit kernels do).
uint block_log2(uint slot) {
    return uint(block_entry(BLOCK_HEAD + 2u * slot));
}

// Element ``off`` of the tensor in ``slot``, counted in elements of 2^log2e bytes (at most 16, so that an element
// never straddles two blocks): its device address, and the elements from it to the end of its block (at least 1;
// 2^32 - 1 where the tensor is one block). ``log2b``: its block_log2. The block is found with 32-bit arithmetic:
// a tensor held in several blocks has blocks of less than 2^32 bytes (maxStorageBufferRange is 32-bit), and a
// one-block tensor fewer than 2^32 elements, so only the final address is 64-bit.
struct Place {
    uint64_t address;
    uint left;
};

Place place_in(uint slot, uint log2b, OFF_T off, uint log2e) {
    bool one = log2b >= 32u;
    uint shift = one ? 0u : log2b - log2e;                           // log2 of elements per block (no branch:
    OFF_T block = one ? OFF_T(0u) : off >> shift;                    // CPU devices run both sides of one)
    uint within = one ? uint(off) : uint(off) & ((1u << shift) - 1u);
    uint64_t first = block_entry(BLOCK_HEAD + 2u * slot + 1u);        // the entry of its first block's address
    return Place(block_entry(first + uint64_t(block)) + (uint64_t(within) << log2e),
                 one ? 0xFFFFFFFFu : (1u << shift) - within);
}

Place place(uint slot, OFF_T off, uint log2e) {
    return place_in(slot, block_log2(slot), off, log2e);
}

// The index at ``pos`` of the index tensor as read: 64 bits, or 32 in the low half.
uint64_t raw_index(OFF_T pos) {
#if IDX64
    return Word64Ref(place(SLOT_IDX, pos, 3u).address).v;
#else
    return uint64_t(WordRef(place(SLOT_IDX, pos, 2u).address).v);
#endif
}
#endif

#if WIDE

// i / size of iteration dimension d: 32-bit (as below) while both fit, else a 64-bit division.
uint64_t divide_dim(uint64_t i, uint d) {
    uint64_t n = PW(P_SHAPE + d);
    if ((i >> 32u) == 0u && PW(P_MAGIC + d) != 0u)    // the host writes magic 0 for sizes of 2^32 and more
        return divide(uint(i), uint(PW(P_MAGIC + d)), uint(PW(P_SHIFT + d)));
    return i / n;
}

// An index as a 64-bit two's complement value, resolved into [0, dim): negative values of signed types count
// from the end, then anything outside is clamped (FLAG_WRAP, FLAG_CLIP: NumPy's modes instead).
// ``missed`` becomes true (FLAG_FILL, FLAG_DROP) where the index lies outside [-dim, dim) (signed types) or
// [0, dim).
uint64_t read_index(uint64_t pos, uint64_t dim, bool is_signed, inout bool missed) {
    uint64_t v = raw_index(pos);
#if !IDX64
    if (is_signed)
        v = uint64_t(int64_t(int(uint(v))));
#endif
    uint mode = uint(PW(P_FLAGS)) & (FLAG_WRAP | FLAG_CLIP);
    bool negative = is_signed && int64_t(v) < 0;
    if ((uint(PW(P_FLAGS)) & (FLAG_FILL | FLAG_DROP)) != 0u &&
        (negative ? dim == 0u || v < 0u - dim : v >= dim))      // (v - 2^64 < -dim: v < 2^64 - dim)
        missed = true;
    if (mode == FLAG_WRAP) {
        uint64_t r = (negative ? 0u - v : v) % dim;               // |v| mod dim (0 - v: -v, also for -2^63)
        return negative && r != 0u ? dim - r : r;
    }
    if (negative)
        return mode == 0u && v >= 0u - dim ? v + dim : 0u;     // value v - 2^64 is in [-dim, -1]
    return v >= dim ? dim - 1u : v;
}
#else
// An index given as a 64-bit two's complement (hi:lo) value, resolved into [0, dim):
// negative values of signed types count from the end, then anything outside is clamped (FLAG_WRAP,
// FLAG_CLIP: NumPy's modes instead).
// (hi:lo) mod d for 0 < d < 2^32 in 32-bit arithmetic: the high word's remainder, then the low word's bits
// shifted in one at a time (r < d, so r doubled plus a bit is below 2d: one subtraction reduces it).
uint mod64(uint hi, uint lo, uint d) {
    if (hi == 0u)
        return lo % d;
    uint r = hi % d;
    for (int b = 31; b >= 0; --b) {
        bool carry = (r & 0x80000000u) != 0u;
        r = (r << 1u) | ((lo >> uint(b)) & 1u);
        if (carry || r >= d)
            r -= d;
    }
    return r;
}

// NumPy's mode="wrap" of an index given as hi:lo (signed: two's complement): its value modulo dim.
uint wrap_index(uint lo, uint hi, uint dim, bool is_signed) {
    bool negative = is_signed && (hi & 0x80000000u) != 0u;
    if (negative) {                                  // |value| = 2^64 - hi:lo
        lo = ~lo + 1u;
        hi = ~hi + (lo == 0u ? 1u : 0u);
    }
    uint r = mod64(hi, lo, dim);
    return negative && r != 0u ? dim - r : r;
}

uint resolve_index(uint lo, uint hi, uint dim, bool is_signed) {
    uint mode = uint(PW(P_FLAGS)) & (FLAG_WRAP | FLAG_CLIP);
    if (mode == FLAG_WRAP)
        return wrap_index(lo, hi, dim, is_signed);
    if (is_signed && (hi & 0x80000000u) != 0u) {
        // value = hi:lo - 2^64 is in [-dim, -1] exactly when hi is all ones and lo >= 2^32 - dim.
        return (mode == 0u && hi == 0xFFFFFFFFu && lo >= 0u - dim) ? lo + dim : 0u;
    }
    return (hi != 0u || lo >= dim) ? dim - 1u : lo;
}

// True when the index hi:lo lies outside [-dim, dim) (signed types) or [0, dim) (mode="raise"'s range).
bool index_outside(uint lo, uint hi, uint dim, bool is_signed) {
    if (is_signed && (hi & 0x80000000u) != 0u)
        return dim == 0u || hi != 0xFFFFFFFFu || lo < 0u - dim;
    return hi != 0u || lo >= dim;
}

// ``missed`` becomes true (FLAG_FILL, FLAG_DROP) where the index lies outside its range (index_outside).
uint read_index(uint pos, uint dim, bool is_signed, inout bool missed) {
#if IDX64 && ADDR
    uint64_t w = raw_index(pos);
    uint lo = uint(w), hi = uint(w >> 32u);
#elif IDX64
    uvec2 v = IDX[pos];
    uint lo = v.x, hi = v.y;
#else
#if ADDR
    uint lo = uint(raw_index(pos));
#else
    uint lo = IDX[pos];
#endif
    uint hi = (is_signed && (lo & 0x80000000u) != 0u) ? 0xFFFFFFFFu : 0u;
#endif
#ifdef INDEX_REPORT
    if ((PW(P_FLAGS) & FLAG_RAISE) != 0u && index_outside(lo, hi, dim, is_signed))
        INDEX_REPORT(pos);
#endif
    if ((PW(P_FLAGS) & (FLAG_FILL | FLAG_DROP)) != 0u && index_outside(lo, hi, dim, is_signed))
        missed = true;
    return resolve_index(lo, hi, dim, is_signed);
}

uint divide_dim(uint i, uint d) {
    return divide(i, PW(P_MAGIC + d), PW(P_SHIFT + d));
}
#endif

struct Offsets {
    OFF_T dense;
    OFF_T data;
};

// Iteration i decoded: its dense offset, the directly mapped part of its data offset, its index offset,
// and its coordinate in the innermost dimension (rank >= 1). The outermost coordinate is what is left of
// i after the inner ones: no division for it (i < P_TOTAL units, so it is below that dimension's size).
struct Position {
    OFF_T dense;
    OFF_T data;
    OFF_T index;
    OFF_T inner;
};

Position locate(OFF_T i) {
    Position p = Position(0u, 0u, 0u, 0u);
    uint rank = uint(PW(P_RANK));
    for (uint d = rank; d > 0u;) {
        --d;
        OFF_T c = i;
        if (d > 0u) {
            OFF_T q = divide_dim(i, d);
            c = i - q * PW(P_SHAPE + d);
            i = q;
        }
        if (d == rank - 1u)
            p.inner = c;
        p.dense += c * PW(P_DENSE + d);
        p.data += c * PW(P_DATA + d);
        p.index += c * PW(P_INDEX + d);
    }
    return p;
}

// p (the position of iteration i - 1) becomes that of iteration i: one step along the innermost
// dimension, or a new decode where it wraps.
void advance(inout Position p, OFF_T i) {
    uint d = uint(PW(P_RANK)) - 1u;
    if (++p.inner < PW(P_SHAPE + d)) {
        p.dense += PW(P_DENSE + d);
        p.data += PW(P_DATA + d);
        p.index += PW(P_INDEX + d);
    } else {
        p = locate(i);
    }
}

// No data offset: FLAG_FILL's and FLAG_DROP's tuple out of range (32-bit maps keep every offset below it:
// IndexMap.fits_32_bits).
const OFF_T NO_OFFSET = ~OFF_T(0u);

// The data offset of a position: its direct part plus each index of its tuple times its data stride; NO_OFFSET
// where FLAG_FILL or FLAG_DROP is set and an index of the tuple lies outside its range (every kernel that runs
// those modes tests it). TUPLE_K (a define, where a variant has one): the tuple size fixed at compile time, so
// that the loop unrolls and a kernel's index loads for several units can all be in flight at once.
OFF_T data_offset(Position p) {
    OFF_T data = p.data;
#ifdef TUPLE_K
    const uint k_count = TUPLE_K;
#else
    uint k_count = uint(PW(P_K));
#endif
    bool is_signed = (PW(P_FLAGS) & FLAG_SIGNED) != 0u;
    OFF_T tstride = PW(P_TSTRIDE);
    bool missed = false;
    for (uint k = 0u; k < k_count; ++k)
        data += read_index(p.index + k * tstride, PW(P_TDIM + k), is_signed, missed) * PW(P_TDATA + k);
    if (missed)
        return (PW(P_FLAGS) & FLAG_SPARE) != 0u ? p.data + PW(P_TDIM) * PW(P_TDATA) : NO_OFFSET;
    return data;
}

Offsets map_offsets(OFF_T i) {
    Position p = locate(i);
    return Offsets(p.dense, data_offset(p));
}
