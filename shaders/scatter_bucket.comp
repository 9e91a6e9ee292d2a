#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
// Scatter reduction, the fold per bucket (dmlgpu/plans/reduction_buckets.py). A key is (j << (RADIX_BITS + O)) |
// (o << RADIX_BITS) | b: bucket b, owner o (O = PW(B_OWNER_BITS) bits), key j < 2^E of the owner (E = PW(R_SHIFT)
// <= MAX_E). Before it: one pass of the radix sort over the buckets (stable, so a bucket's rows are in row-major
// order; HIST: bucket b's rows from places_at(b, 0)), then radix_scatter_match.comp's TILE_LOCAL over the same
// tiles, which sorts each tile stably by owner and says where each owner's rows are in it (TILE_DIGITS).
// Invocation i is owner o = i & (2^O - 1) of bucket b = i >> O. It goes through its bucket's tiles in order and,
// in each, through its rows in order (rows of other buckets, in a tile that two buckets share, come before or
// after them), folding each into its key's accumulator (fold_owner): from the output's value, or with
// MODE_EXCLUDE_SELF from the key's first row; then writes the keys that had rows (the MEAN variants: mean_of(sum,
// rows + 1, or rows with MODE_EXCLUDE_SELF); with MODE_SOURCE the output's values come from SOURCE, the input,
// and every key is written (the keys are then every offset of the output: no copy before). A heavy owner (more
// than PW(B_HEAVY) rows) is folded by a whole subgroup instead (fold_heavy), after the light ones. With
// PW(B_RANKED) (an owner has one key, a workgroup is a bucket: O = RADIX_BITS, E = 0) there is no TILE_LOCAL pass:
// KEYS and VALS are the radix pass's output, and each bucket's tiles are ranked by owner here, one at a time, in
// shared memory (fold_ranked). So each key's rows are folded in one invocation in row-major order: the bits of
// scatter_reduce.comp. Element type and operation: ELEM_KIND, ELEM_BYTES, OP (arith.glsl).
#define UNIT ELEM_BYTES
#define IDX64 0
#include "units.glsl"
#include "radix.glsl"
// fold_ranked's tiles: the radix pass's (ITEMS rows per invocation: more took more registers, and every fold of the
// kernel slowed; bench/RESULTS.md), their values sorted by owner
const uint RANK_WORDS = TILE;
#include "tile_rank.glsl"
layout(std430, binding = 1) restrict readonly buffer Keys { uint KEYS[]; };
layout(std430, binding = 2) restrict readonly buffer Vals { uint VALS[]; };
layout(std430, binding = 3) restrict readonly buffer Hist { uint HIST[]; };
layout(std430, binding = 4) restrict readonly buffer TileDigits { uint TILE_DIGITS[]; };
layout(std430, binding = 5) buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 6) restrict readonly buffer Source { UNIT_T SOURCE[]; };   // with MODE_SOURCE
#include "arith.glsl"
const uint B_OWNER_BITS = R_SCAN_DIGITS + 1u;   // (names and offsets: dmlgpu/plans/reduction_buckets.py's)
const uint B_FOLD_SHIFT = R_SCAN_DIGITS + 2u;   // target offset = key << PW(B_FOLD_SHIFT)
const uint B_MODE = R_SCAN_DIGITS + 3u;         // MODE_ bits (scatter_reduce.comp's)
const uint B_LAST_KEY = R_SCAN_DIGITS + 4u;     // the largest key (the output's value of none past it is read)
const uint B_OWNERS = R_SCAN_DIGITS + 5u;       // invocations: buckets << O
const uint B_HEAVY = R_SCAN_DIGITS + 6u;        // an owner of more rows is folded by a subgroup (fold_heavy)
const uint B_RANKED = R_SCAN_DIGITS + 7u;       // 1: every bucket by fold_ranked (O = RADIX_BITS, E = 0)
const uint MODE_EXCLUDE_SELF = 1u;
const uint MODE_SOURCE = 4u;    // the output's values are SOURCE's (the input, in the output's layout: no copy
                                // before), and every key up to PW(B_LAST_KEY) is written, with rows or not
const uint KEYS_PER_OWNER = 1u << MAX_E;

const uint BLOCK = 32u;                         // rows loaded at once

// Key j of owner o of bucket b (O: owner bits), whether a key is in bucket b.
uint key_of(uint b, uint o, uint j, uint O) { return (((j << O) | o) << RADIX_BITS) | b; }
bool in_bucket(uint key, uint b) { return (key & (RADIX - 1u)) == b; }

// Bucket b's places [first, end) in the sorted rows.
void bucket_places(uint b, out uint first, out uint end) {
    first = HIST[places_at(b, 0u)];
    end = b + 1u < RADIX ? HIST[places_at(b + 1u, 0u)] : PW(R_COUNT);
}

bool from_source() { return (PW(B_MODE) & MODE_SOURCE) != 0u; }

// The output's value of a key before its rows (SOURCE's with MODE_SOURCE, else DATA's; a branch, not a select:
// no load past the output).
ELEM_T value_of(uint key, uint shift) {
    ELEM_T v = ELEM_T(0u);
    if (key <= PW(B_LAST_KEY))
        v = from_source() ? ELEM_T(LOAD_UNIT(SOURCE, key << shift)) : ELEM_T(LOAD_UNIT_ATOMIC(DATA, key << shift));
    return v;
}

// A key's accumulator before its rows: the output's value (none with MODE_EXCLUDE_SELF).
ELEM_T output_of(uint key, uint shift, bool exclude) {
    return exclude ? ELEM_T(0u) : value_of(key, shift);
}

// With MODE_SOURCE, a key without rows (up to the last key): its output's value.
void keep_key(uint key, uint shift) {
    if (key <= PW(B_LAST_KEY))
        STORE_UNIT(DATA, key << shift, value_of(key, shift));
}

// A key's result: where it had rows, its accumulator (the MEAN variants: mean_of(sum, rows + 1, or rows with
// MODE_EXCLUDE_SELF)); with MODE_SOURCE, of a key without rows (up to the last key), its output's value.
void store_key(uint key, uint shift, ELEM_T acc, uint count, bool exclude) {
    if (count != 0u) {
        if (MEAN != 0u)
            acc = mean_of(acc, count + (exclude ? 0u : 1u));
        STORE_UNIT(DATA, key << shift, acc);
    } else if (from_source()) {
        keep_key(key, shift);
    }
}

// One row of value ``v`` for a key (owners of several keys): its accumulator and count.
#define FOLD_ROW(ACC, COUNT, v) { ACC = exclude && COUNT == 0u ? (v) : combine(ACC, (v)); COUNT += 1u; }

// FAST_FOLD (float32, bfloat16 and float16 add and mul): a step of a block of rows, taken with a select (``use``)
// so that every lane of a subgroup runs the same instructions, on an accumulator in a working form (fast_begin,
// fast_end) and a row's value in that form (fast_in) that passed fast_operand (``ok``). float32: the device's own
// arithmetic, a block whose result is a NaN redone with combine() (scatter_reduce.comp's FOLD_BLOCKS says why the
// bits are the same otherwise). bfloat16 and float16: arith.glsl's FAST_STEP; bfloat16 keeps the accumulator in
// float32 form, rounded to the type there (fast_keep) and checked before and after that rounding (so that it is a
// fast operand of the next step), float16 in its own bits, checked as an operand at each step (each form measured
// the faster for its type). A block where a step did not pass the checks is redone. fast_done: whether the
// block's result stands.
#if ELEM_KIND == 2 && ELEM_BYTES == 4      // (the bucket variants are add and mul alone)
#define FAST_FOLD 1
const uint FOLD_UNROLL = 32u;
uint fast_in(uint x) { return x; }
bool fast_operand(uint x) { return true; }
uint fast_begin(uint acc, uint c, bool exclude, inout bool slow) { return acc; }
uint fast_end(uint f) { return f; }
void fast_step(inout uint f, inout uint c, inout bool slow, uint x, bool ok, bool use, bool exclude) {
    uint r = f32_op(uintBitsToFloat(f), uintBitsToFloat(x));
    f = use ? (all(bvec2(exclude, c == 0u)) ? x : r) : f;
    c += use ? 1u : 0u;
}
bool fast_done(uint f, bool slow) { return !f32_is_nan(f); }
#elif defined(FAST_STEP) && ELEM_KIND == 3
#define FAST_FOLD 1
const uint FOLD_UNROLL = 32u;                   // (H200, reduction_buckets.py's Zipf case: 5.0 ms against 6.7 with 8)
uint fast_in(uint x) { return fast_f32(x); }
uint fast_begin(uint acc, uint c, bool exclude, inout bool slow) {
    slow = any(bvec2(slow, !any(bvec2(fast_operand(acc), all(bvec2(exclude, c == 0u))))));
    return fast_f32(acc);
}
uint fast_end(uint f) { return fast_round(f); }
void fast_step(inout uint f, inout uint c, inout bool slow, uint x, bool ok, bool use, bool exclude) {
    bool first = all(bvec2(exclude, c == 0u));
    uint r = f32_op(uintBitsToFloat(f), uintBitsToFloat(x)), kept = fast_keep(r);
    bool good = all(bvec2(ok, any(bvec2(first, all(bvec2(fast_result(r), fast_result(kept)))))));
    slow = any(bvec2(slow, all(bvec2(use, !good))));
    f = use ? (first ? x : kept) : f;
    c += use ? 1u : 0u;
}
bool fast_done(uint f, bool slow) { return !slow; }
#elif defined(FAST_STEP)                        // float16: the accumulator in its own bits, each step checking it
#define FAST_FOLD 1
const uint FOLD_UNROLL = 8u;                    // (the code of 32 of these steps outgrows the instruction cache)
uint fast_in(uint x) { return x; }
uint fast_begin(uint acc, uint c, bool exclude, inout bool slow) { return acc; }
uint fast_end(uint h) { return h; }
void fast_step(inout uint h, inout uint c, inout bool slow, uint x, bool ok, bool use, bool exclude) {
    bool first = all(bvec2(exclude, c == 0u));
    uint r = f32_op(uintBitsToFloat(fast_f32(h)), uintBitsToFloat(fast_f32(x)));
    bool good = all(bvec2(ok, any(bvec2(first, all(bvec2(fast_operand(h), fast_result(r)))))));
    slow = any(bvec2(slow, all(bvec2(use, !good))));
    h = use ? (first ? x : fast_round(r)) : h;
    c += use ? 1u : 0u;
}
bool fast_done(uint h, bool slow) { return !slow; }
#endif

// Row q of a tile: its value and whether it is in bucket b; ``ranked``: of fold_ranked's tile in shared memory
// (every row is; a constant at each call).
uint row_value(uint q, bool ranked) { return ranked ? s_mem[q] : VALS[q]; }
bool row_in(uint q, uint b, bool ranked) { return ranked || in_bucket(KEYS[q], b); }

// The owner's one key (keys per owner: 1) folded with the rows [p, p + rows) of the tile that are in bucket b,
// in order: every lane of a subgroup runs the same FAST_FOLD steps whatever its rows, so that owners with many
// rows and owners with few in one subgroup do not take turns; other types (and blocks to redo) row by row.
void fold_block(inout ELEM_T acc, inout uint count, uint p, uint rows, uint b, bool exclude, bool ranked) {
#ifdef FAST_FOLD
    uint c = count;
    bool slow = false;
    uint f = fast_begin(acc, c, exclude, slow);
    for (uint k = 0u; k < BLOCK; ++k) {
        uint q = p + min(k, rows - 1u), x = row_value(q, ranked);
        fast_step(f, c, slow, fast_in(x), fast_operand(x), k < rows && row_in(q, b, ranked), exclude);
    }
    if (fast_done(f, slow)) {
        acc = fast_end(f);
        count = c;
        return;
    }
#endif
    for (uint k = 0u; k < rows; ++k) {
        if (row_in(p + k, b, ranked)) {
            ELEM_T v = ELEM_T(row_value(p + k, ranked));
            FOLD_ROW(acc, count, v)
        }
    }
}

// Bucket b's places [first, end) of the radix pass's output (KEYS, VALS: in row-major order), where an owner has
// one key and the workgroup is the bucket (invocation o: owner o), a tile of rows at a time: ranked by owner
// (tile_rank.glsl) into shared memory, where invocation o folds owner o's rows of the tile in order (an owner of
// many rows makes its subgroup wait, not load: its rows are in shared memory).
void fold_ranked(uint b, uint o, uint first, uint end, uint shift, bool exclude) {
    uint s = gl_SubgroupID, S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    uint key = key_of(b, o, 0u, RADIX_BITS), count = 0u;
    ELEM_T acc = output_of(key, shift, exclude);
    for (uint tile = first; tile < end; tile += TILE) {
        uint segment = tile + s * ITEMS * S, vals[ITEMS], digits[ITEMS], ranks[ITEMS], rows, start;
        clear_counters();
        for (uint k = 0u; k < ITEMS; ++k) {
            uint i = segment + k * S + lane;
            digits[k] = i < end ? (KEYS[i] >> RADIX_BITS) & (RADIX - 1u) : 0u;
            vals[k] = i < end ? VALS[i] : 0u;
        }
        barrier();
        tile_places(digits, segment, end, ranks, rows, start);
        for (uint k = 0u; k < ITEMS; ++k)
            if (segment + k * S + lane < end)
                s_mem[ranks[k]] = vals[k];
        barrier();
        for (uint p = start; p < start + rows; p += BLOCK)
            fold_block(acc, count, p, min(BLOCK, start + rows - p), b, exclude, true);
        barrier();
    }
    store_key(key, shift, acc, count, exclude);
}

// Owner o of bucket b, by its own invocation: [first, end) are the bucket's places.
void fold_owner(uint b, uint o, uint first, uint end, uint O, uint keys, uint shift, bool exclude) {
    // key j's accumulator and count: a0, c0 for j = 0 (registers: the one key of an owner where keys are few),
    // acc[j], count[j] for the others
    ELEM_T acc[KEYS_PER_OWNER], a0 = ELEM_T(0u);
    uint count[KEYS_PER_OWNER], c0 = 0u;
    for (uint j = 0u; j < keys; ++j) {    // the output's values first, all loads at once
        count[j] = 0u;
        acc[j] = output_of(key_of(b, o, j, O), shift, exclude);
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
                fold_block(a0, c0, p, rows, b, exclude, false);
                continue;
            }
            for (uint k = 0u; k < rows; ++k) {
                uint key = KEYS[p + k];
                if (in_bucket(key, b)) {
                    uint j = key >> (RADIX_BITS + O);
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
    for (uint j = 0u; j < keys; ++j)
        store_key(key_of(b, o, j, O), shift, acc[j], count[j], exclude);
}

// A heavy owner's rows, by a whole subgroup (S: its size; keys <= S): lane j holds key j's accumulator and
// folds, in order, the rows of key j. The bucket's tiles are taken S at a time, lane l reading tile l's digits
// (the owner's first place and count there), so that the owner's rows in S tiles are one sequence (row r is in
// the tile of the last lane whose earlier rows, ``before``, are at most r: place_of). The subgroup loads
// 4 S rows of it at a time (lane l: rows c + u S + l, u < 4), the next ones while these are folded, and hands
// each row's value to every lane by a shuffle; each lane knows which rows are its key's by ballots. No shared
// memory, and so no subgroup barrier: llvmpipe takes those for workgroup barriers.
shared uint s_heavy[WORKGROUP_SIZE];            // the workgroup's heavy owners (local invocation ids)
shared uint s_heavy_count;
const uint NOT_MINE = 0xFFFFFFFFu;              // a row of another bucket (or past the sequence)

uint place_of(uint r, uint before, uint start) {
    uint l = 0u;
    for (uint step = gl_SubgroupSize >> 1u; step > 0u; step >>= 1u)
        l = subgroupShuffle(before, l + step) <= r ? l + step : l;
    return subgroupShuffle(start, l) + (r - subgroupShuffle(before, l));
}

// Row r of the sequence (``total`` rows): its key index in the owner (or NOT_MINE) and value. (Four rows per lane
// at a time, LOAD_CHUNK, in scalars: arrays indexed in loops go to local memory.)
void load_row(uint r, uint total, uint before, uint start, uint b, uint O, out uint j, out uint v) {
    uint q = place_of(min(r, total - 1u), before, start);
    uint key = r < total ? KEYS[q] : NOT_MINE;
    v = r < total ? VALS[q] : 0u;
    j = key != NOT_MINE && in_bucket(key, b) ? key >> (RADIX_BITS + O) : NOT_MINE;
}
#define LOAD_CHUNK(c, j0, v0, j1, v1, j2, v2, j3, v3) { uint r_ = (c) + gl_SubgroupInvocationID, S_ = gl_SubgroupSize; \
    load_row(r_, total, before, start, b, O, j0, v0); load_row(r_ + S_, total, before, start, b, O, j1, v1); \
    load_row(r_ + 2u * S_, total, before, start, b, O, j2, v2); \
    load_row(r_ + 3u * S_, total, before, start, b, O, j3, v3); }

// S loaded rows (lane k: key index j, value v), in order, each into its key's lane.
void fold_rows(inout ELEM_T acc, inout uint count, uint j, uint v, uint keys, bool exclude) {
    uint lane = gl_SubgroupInvocationID, mine = 0u;     // bit k: row k is this lane's key's (S <= 32 here)
    for (uint k = 0u; k < keys; ++k) {
        uint m = subgroupBallot(j == k).x;
        mine = lane == k ? m : mine;
    }
    if (subgroupBallot(mine != 0u).x == 0u)
        return;
    bool done = false;
#ifdef FAST_FOLD
    uint c = count, ok = subgroupBallot(fast_operand(v)).x, x = fast_in(v);    // (each lane its own row's)
    bool slow = false;
    uint f = fast_begin(acc, c, exclude, slow);
    // (unrolled, so that the shuffles are issued ahead of the steps; rows past S are no lane's)
    [[dont_unroll]] for (uint k0 = 0u; k0 < 32u; k0 += FOLD_UNROLL)
        [[unroll]] for (uint k = k0; k < k0 + FOLD_UNROLL; ++k)
            fast_step(f, c, slow, subgroupShuffle(x, k), ((ok >> k) & 1u) != 0u, ((mine >> k) & 1u) != 0u, exclude);
    done = fast_done(f, slow);
    if (done) {
        acc = fast_end(f);
        count = c;
    }
#endif
    if (subgroupBallot(!done).x == 0u)
        return;
    for (uint k = 0u; k < gl_SubgroupSize; ++k) {
        ELEM_T x = ELEM_T(subgroupShuffle(v, k));
        if (!done && ((mine >> k) & 1u) != 0u)
            FOLD_ROW(acc, count, x)
    }
}

void fold_heavy(uint b, uint o, uint first, uint end, uint O, uint keys, uint shift, bool exclude) {
    uint lane = gl_SubgroupInvocationID, S = gl_SubgroupSize, chunk = 4u * S;
    uint mine = key_of(b, o, lane, O);       // lane j's key (j < keys)
    ELEM_T acc = ELEM_T(0u);
    uint count = 0u;
    if (lane < keys)
        acc = output_of(mine, shift, exclude);
    uint last = (end - 1u) / TILE;
    for (uint group = first / TILE; group <= last; group += S) {
        uint tile = group + lane;
        uint where = tile <= last ? TILE_DIGITS[tile * RADIX + o] : 0u;
        uint start = tile * TILE + (where & 0xFFFFu), before = subgroupExclusiveAdd(where >> 16u);
        uint total = subgroupAdd(where >> 16u);
        if (total == 0u)
            continue;
        uint j0, v0, j1, v1, j2, v2, j3, v3, n0, w0, n1, w1, n2, w2, n3, w3;
        LOAD_CHUNK(0u, n0, w0, n1, w1, n2, w2, n3, w3)
        for (uint c = 0u; c < total; c += chunk) {
            j0 = n0; v0 = w0; j1 = n1; v1 = w1; j2 = n2; v2 = w2; j3 = n3; v3 = w3;
            if (c + chunk < total)                 // the next rows' loads, in flight during the fold
                LOAD_CHUNK(c + chunk, n0, w0, n1, w1, n2, w2, n3, w3)
            [[dont_unroll]] for (uint u = 0u; u < 4u; ++u)      // (one copy of fold_rows' code)
                fold_rows(acc, count, u == 0u ? j0 : u == 1u ? j1 : u == 2u ? j2 : j3,
                          u == 0u ? v0 : u == 1u ? v1 : u == 2u ? v2 : v3, keys, exclude);
        }
    }
    if (lane < keys)
        store_key(mine, shift, acc, count, exclude);
}

void main() {
    uint i = gl_GlobalInvocationID.x, t = gl_LocalInvocationID.x;
    uint O = PW(B_OWNER_BITS), shift = PW(B_FOLD_SHIFT), keys = 1u << PW(R_SHIFT);
    bool exclude = (PW(B_MODE) & MODE_EXCLUDE_SELF) != 0u;
    if (t == 0u)
        s_heavy_count = 0u;
    uint b = i >> O, o = i & ((1u << O) - 1u), first = 0u, end = 0u;
    if (i < PW(B_OWNERS))
        bucket_places(b, first, end);
    if (PW(B_RANKED) != 0u) {
        fold_ranked(b, o, first, end, shift, exclude);
        return;
    }
    // heavy: more than PW(B_HEAVY) rows in its bucket's tiles, as estimated from four of them spread over the
    // bucket (the rows of buckets that share a tile counted too; a choice of speed only, not of the result)
    uint rows = 0u, tiles = first == end ? 0u : (end - 1u) / TILE - first / TILE + 1u, samples = min(tiles, 4u);
    for (uint k = 0u; k < samples; ++k)
        rows += TILE_DIGITS[(first / TILE + k * (tiles - 1u) / max(samples - 1u, 1u)) * RADIX + o] >> 16u;
    bool heavy = float(rows) * float(tiles) > float(PW(B_HEAVY)) * float(samples) && keys <= gl_SubgroupSize
        && gl_SubgroupSize <= 32u;
    barrier();
    if (heavy)
        s_heavy[atomicAdd(s_heavy_count, 1u)] = t;
    barrier();
    if (first != end && !heavy)
        fold_owner(b, o, first, end, O, keys, shift, exclude);
    else if (first == end && from_source() && i < PW(B_OWNERS))   // (a bucket without rows)
        for (uint j = 0u; j < keys; ++j)
            keep_key(key_of(b, o, j, O), shift);
    // then the subgroups take the workgroup's heavy owners in turn (each folded by one subgroup; not claimed by
    // atomics: llvmpipe runs a subgroup until a barrier, so that one subgroup would take them all and meet its
    // limit of loop iterations)
    uint heavies = s_heavy_count;
    for (uint k = gl_SubgroupID; k < heavies; k += gl_NumSubgroups) {
        uint h = i - t + s_heavy[k];
        uint hb = h >> O, hfirst, hend;
        bucket_places(hb, hfirst, hend);
        fold_heavy(hb, h & ((1u << O) - 1u), hfirst, hend, O, keys, shift, exclude);
    }
}
