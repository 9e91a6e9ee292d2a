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
const uint P_TOTAL = 1u;    // iterations of the kernel's loop (units of the dense tensor, or words: see bit 1)
const uint P_K = 2u;        // index tuple size, 0..8 (0: plain strided copy)
const uint P_FLAGS = 3u;    // FLAG_* bits
const uint P_TSTRIDE = 4u;  // distance between the components of one index tuple, in index elements
const uint P_UNITS = 5u;    // units of the dense tensor (with flag bit 1)
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
const uint FLAG_WORDS = 2u;   // gather of 1- or 2-byte units into a packed dense tensor, one 32-bit word of it
                              // per iteration
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

Offsets map_offsets(uint i) {
    uint dense = 0u, data = 0u, index = 0u;
    for (uint d = P[P_RANK]; d > 0u;) {
        --d;
        uint q = divide(i, P[P_MAGIC + d], P[P_SHIFT + d]);
        uint c = i - q * P[P_SHAPE + d];
        i = q;
        dense += c * P[P_DENSE + d];
        data += c * P[P_DATA + d];
        index += c * P[P_INDEX + d];
    }
    uint k_count = P[P_K];
    bool is_signed = (P[P_FLAGS] & FLAG_SIGNED) != 0u;
    uint tstride = P[P_TSTRIDE];
    for (uint k = 0u; k < k_count; ++k)
        data += read_index(index + k * tstride, P[P_TDIM + k], is_signed) * P[P_TDATA + k];
    return Offsets(dense, data);
}
