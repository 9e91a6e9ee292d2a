#version 450
#extension GL_GOOGLE_include_directive : require
// Scatter reduction, the fold per bucket (dmlgpu/reduction_buckets.py). Before it: one pass of the radix sort
// over the keys' top bits (key >> PW(R_SHIFT): the bucket; stable, so a bucket's rows are in row-major order;
// HIST: its counts and places, bucket b's rows from places_at(b, 0)), then radix_scatter_match.comp's TILE_LOCAL
// over the same tiles, which sorts each tile stably by owner, key & (2^O - 1) with O = PW(B_OWNER_BITS), and
// says where each owner's rows are in it (TILE_DIGITS). Invocation i is owner o = i & (2^O - 1) of bucket
// b = i >> O: the keys (b << PW(R_SHIFT)) | (j << O) | o for j < 2^E, E = PW(R_SHIFT) - O <= MAX_E. It goes
// through its bucket's tiles in order and, in each, through its rows in order (rows of other buckets, in a
// tile that two buckets share, come before or after them), folding each into its key's accumulator: from
// the output's value, or with MODE_EXCLUDE_SELF from the key's first row; then writes the keys that had rows
// (the MEAN variants: mean_of(sum, rows + 1, or rows with MODE_EXCLUDE_SELF)). So each key's rows are folded by
// one invocation in row-major order: the bits of scatter_reduce.comp. Element type and operation: ELEM_KIND,
// ELEM_BYTES, OP (arith.glsl).
#define UNIT ELEM_BYTES
#define IDX64 0
#include "units.glsl"
#include "radix.glsl"
layout(std430, binding = 1) restrict readonly buffer Keys { uint KEYS[]; };
layout(std430, binding = 2) restrict readonly buffer Vals { uint VALS[]; };
layout(std430, binding = 3) restrict readonly buffer Hist { uint HIST[]; };
layout(std430, binding = 4) restrict readonly buffer TileDigits { uint TILE_DIGITS[]; };
layout(std430, binding = 5) buffer Data { UNIT_T DATA[]; };
#include "arith.glsl"
const uint B_OWNER_BITS = R_SCAN_DIGITS + 1u;   // (names and offsets: dmlgpu/reduction_buckets.py's)
const uint B_FOLD_SHIFT = R_SCAN_DIGITS + 2u;   // target offset = key << PW(B_FOLD_SHIFT)
const uint B_MODE = R_SCAN_DIGITS + 3u;         // MODE_ bits (scatter_reduce.comp's)
const uint B_LAST_KEY = R_SCAN_DIGITS + 4u;     // the largest key (the output's value of none past it is read)
const uint B_OWNERS = R_SCAN_DIGITS + 5u;       // invocations: buckets << O
const uint MODE_EXCLUDE_SELF = 1u;
const uint KEYS_PER_OWNER = 1u << MAX_E;

const uint BLOCK = 32u;                         // rows loaded at once

// The owner's one key (keys per owner: 1) folded with the rows [p, p + rows) of the tile that are in bucket b,
// in order: every lane of a subgroup runs the same instructions whatever its rows (a row that is not the key's
// is skipped by a select, not a branch), so that owners with many rows and owners with few in one subgroup do
// not take turns. float32 add and mul: the device's own arithmetic, redone by combine() if the result is a NaN
// (scatter_reduce.comp's FOLD_BLOCKS says why the bits are the same otherwise).
void fold_block(inout ELEM_T acc, inout uint count, uint p, uint rows, uint b, uint low, bool exclude) {
#if ELEM_KIND == 2 && ELEM_BYTES == 4 && (OP == OP_ADD || OP == OP_MUL)
    precise float s = uintBitsToFloat(acc);
    uint c = count;
    for (uint k = 0u; k < BLOCK; ++k) {
        uint q = p + min(k, rows - 1u);
        bool use = k < rows && KEYS[q] >> low == b;
        precise float x = uintBitsToFloat(VALS[q]);
#if OP == OP_ADD
        precise float r = s + x;
#else
        precise float r = s * x;
#endif
        s = use ? (exclude && c == 0u ? x : r) : s;
        c += use ? 1u : 0u;
    }
    uint bits = floatBitsToUint(s);
    if (!f32_is_nan(bits)) {
        acc = bits;
        count = c;
        return;
    }
#endif
    for (uint k = 0u; k < BLOCK; ++k) {
        uint q = p + min(k, rows - 1u);
        bool use = k < rows && KEYS[q] >> low == b;
        ELEM_T v = ELEM_T(VALS[q]);
        acc = use ? (exclude && count == 0u ? v : combine(acc, v)) : acc;
        count += use ? 1u : 0u;
    }
}

// One row of value ``v`` for a key (owners of several keys): its accumulator and count.
#define FOLD_ROW(ACC, COUNT, v) { ACC = exclude && COUNT == 0u ? (v) : combine(ACC, (v)); COUNT += 1u; }

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= PW(B_OWNERS))
        return;
    uint low = PW(R_SHIFT), O = PW(B_OWNER_BITS), shift = PW(B_FOLD_SHIFT);
    uint b = i >> O, o = i & ((1u << O) - 1u), keys = 1u << (low - O);
    bool exclude = (PW(B_MODE) & MODE_EXCLUDE_SELF) != 0u;
    uint first = HIST[places_at(b, 0u)];
    uint end = b + 1u < RADIX ? HIST[places_at(b + 1u, 0u)] : PW(R_COUNT);
    if (first == end)
        return;
    // key j's accumulator and count: a0, c0 for j = 0 (registers: the one key of an owner where keys are few, and
    // the hot keys of skewed inputs), acc[j], count[j] for the others
    ELEM_T acc[KEYS_PER_OWNER], a0 = ELEM_T(0u);
    uint count[KEYS_PER_OWNER], c0 = 0u;
    for (uint j = 0u; j < keys; ++j) {    // the output's values first, all loads at once
        uint key = (b << low) | (j << O) | o;
        count[j] = 0u;
        acc[j] = ELEM_T(0u);
        if (!exclude && key <= PW(B_LAST_KEY))
            acc[j] = LOAD_UNIT_ATOMIC(DATA, key << shift);
    }
    a0 = acc[0];
    uint last = (end - 1u) / TILE, where = TILE_DIGITS[first / TILE * RADIX + o];
    for (uint tile = first / TILE; tile <= last; ++tile) {
        uint next = tile < last ? TILE_DIGITS[(tile + 1u) * RADIX + o] : 0u;    // (loaded a tile ahead)
        uint p = tile * TILE + (where & 0xFFFFu), stop = p + (where >> 16u);
        where = next;
        // the owner's rows of the tile (those of another bucket, where two share the tile, come before this
        // bucket's or after them)
        for (; p < stop; p += BLOCK) {
            uint rows = min(BLOCK, stop - p);
            if (keys == 1u) {
                fold_block(a0, c0, p, rows, b, low, exclude);
                continue;
            }
            for (uint k = 0u; k < rows; ++k) {
                uint key = KEYS[p + k];
                if (key >> low == b) {
                    uint j = (key & ((1u << low) - 1u)) >> O;
                    ELEM_T v = ELEM_T(VALS[p + k]);
                    if (j == 0u)
                        FOLD_ROW(a0, c0, v)
                    else
                        FOLD_ROW(acc[j], count[j], v)
                }
            }
        }
    }
    acc[0] = a0;
    count[0] = c0;
    for (uint j = 0u; j < keys; ++j) {
        if (count[j] != 0u) {
#if defined(MEAN) && MEAN
            acc[j] = mean_of(acc[j], count[j] + (exclude ? 0u : 1u));
#endif
            STORE_UNIT(DATA, ((b << low) | (j << O) | o) << shift, acc[j]);
        }
    }
}
