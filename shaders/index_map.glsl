// The index machinery shared by every kernel: decode a linear id over the iteration space, apply the
// strides of the three tensors, read each index of the tuple (32- or 64-bit, signed or not), wrap negative
// indices, clamp, and add the indexed coordinates. Host side: dmlgpu/index_map.py (same word layout and names,
// checked by tests/test_kernels.py).
//
// Terms: the iteration space is the "dense" tensor's shape (gather: output; scatter: updates);
// the "data" tensor is the one addressed through the indices (gather: input; scatter: output).
// All offsets are in units of UNIT bytes; index offsets in index elements.
//
// Needs: IDX64 (0/1), and the buffers P[] (params) and IDX[] (indices: uvec2[] when IDX64, else uint[]).

const uint P_RANK = 0u;     // iteration dimensions after folding, 0..8
const uint P_TOTAL = 1u;    // iterations of the kernel's loop (units of the dense tensor, or groups or rows of them)
const uint P_K = 2u;        // index tuple size, 0..8 (0: plain strided copy)
const uint P_FLAGS = 3u;    // FLAG_* bits
const uint P_TSTRIDE = 4u;  // distance between the components of one index tuple, in index elements
const uint P_UNITS = 5u;    // units of the dense tensor
const uint P_SHAPE = 8u;    // [8] iteration sizes
const uint P_DENSE = 16u;   // [8] dense-tensor strides
const uint P_DATA = 24u;    // [8] data-tensor strides of the directly mapped dimensions
const uint P_INDEX = 32u;   // [8] index-tensor strides
const uint P_TDIM = 40u;    // [8] size of the data dimension each tuple component indexes
const uint P_TDATA = 48u;   // [8] data-tensor stride of that dimension
const uint P_MAGIC = 56u;   // [8] magic multiplier of iteration size d (sizes are >= 2 after folding) ...
const uint P_SHIFT = 64u;   // [8] ... and its shift l = ceil(log2(size)): see divide()
const uint P_END = 72u;     // kernels with parameters of their own put them from here on
const uint FLAG_SIGNED = 1u;  // indices are of a signed type
const uint FLAG_ROWS = 4u;    // gather moving whole rows of the innermost dimension, one per iteration

// i / n for 2 <= n < 2^32 without a division instruction (Granlund-Montgomery): m = 2^32 (2^l - n) / n + 1.
uint divide(uint i, uint m, uint l) {
    uint hi, lo;
    umulExtended(m, i, hi, lo);
    return (hi + ((i - hi) >> 1u)) >> (l - 1u);
}

// An index given as a 64-bit two's complement (hi:lo) value, resolved into [0, dim):
// negative values of signed types count from the end, then anything outside is clamped.
uint resolve_index(uint lo, uint hi, uint dim, bool is_signed) {
    if (is_signed && (hi & 0x80000000u) != 0u) {
        // value = hi:lo - 2^64 is in [-dim, -1] exactly when hi is all ones and lo >= 2^32 - dim.
        return (hi == 0xFFFFFFFFu && lo >= 0u - dim) ? lo + dim : 0u;
    }
    return (hi != 0u || lo >= dim) ? dim - 1u : lo;
}

uint read_index(uint pos, uint dim, bool is_signed) {
#if IDX64
    uvec2 v = IDX[pos];
    uint lo = v.x, hi = v.y;
#else
    uint lo = IDX[pos];
    uint hi = (is_signed && (lo & 0x80000000u) != 0u) ? 0xFFFFFFFFu : 0u;
#endif
    return resolve_index(lo, hi, dim, is_signed);
}

struct Offsets {
    uint dense;
    uint data;
};

// Iteration i decoded: its dense offset, the directly mapped part of its data offset, its index offset,
// and its coordinate in the innermost dimension (rank >= 1). The outermost coordinate is what is left of
// i after the inner ones: no division for it (i < P_TOTAL units, so it is below that dimension's size).
struct Position {
    uint dense;
    uint data;
    uint index;
    uint inner;
};

Position locate(uint i) {
    Position p = Position(0u, 0u, 0u, 0u);
    uint rank = P[P_RANK];
    for (uint d = rank; d > 0u;) {
        --d;
        uint c = i;
        if (d > 0u) {
            uint q = divide(i, P[P_MAGIC + d], P[P_SHIFT + d]);
            c = i - q * P[P_SHAPE + d];
            i = q;
        }
        if (d == rank - 1u)
            p.inner = c;
        p.dense += c * P[P_DENSE + d];
        p.data += c * P[P_DATA + d];
        p.index += c * P[P_INDEX + d];
    }
    return p;
}

// p (the position of iteration i - 1) becomes that of iteration i: one step along the innermost
// dimension, or a new decode where it wraps.
void advance(inout Position p, uint i) {
    uint d = P[P_RANK] - 1u;
    if (++p.inner < P[P_SHAPE + d]) {
        p.dense += P[P_DENSE + d];
        p.data += P[P_DATA + d];
        p.index += P[P_INDEX + d];
    } else {
        p = locate(i);
    }
}

// The data offset of a position: its direct part plus each index of its tuple times its data stride.
// TUPLE_K (a define, where a variant has one): the tuple size fixed at compile time, so that the loop
// unrolls and a kernel's index loads for several units can all be in flight at once.
uint data_offset(Position p) {
    uint data = p.data;
#ifdef TUPLE_K
    const uint k_count = TUPLE_K;
#else
    uint k_count = P[P_K];
#endif
    bool is_signed = (P[P_FLAGS] & FLAG_SIGNED) != 0u;
    uint tstride = P[P_TSTRIDE];
    for (uint k = 0u; k < k_count; ++k)
        data += read_index(p.index + k * tstride, P[P_TDIM + k], is_signed) * P[P_TDATA + k];
    return data;
}

Offsets map_offsets(uint i) {
    Position p = locate(i);
    return Offsets(p.dense, data_offset(p));
}
