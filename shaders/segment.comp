#version 450
#extension GL_GOOGLE_include_directive : require
// Segment and bag reductions in one pass (dmlgpu/plans/segment.py): segment_reduce, embedding_bag, gather_scatter.
// Invocation i (a grid-stride loop over PW(P_TOTAL) = segments x COLS) reduces column c = i % COLS of segment
// s = i / COLS into OUT[i] (lanes along the row: neighbouring invocations read neighbouring elements of a row).
// Segment s covers positions [lo, hi): CSR offsets (lo = offset(s), hi = max(offset(s + 1), lo), both clamped to
// [0, PW(P_LIMIT)]; MODE_OPEN_END: the last segment ends at PW(P_LIMIT), no offset read) or, with MODE_FIXED, bags of PW(P_FIXED) positions. Position r is row r of DATA, or with
// MODE_IDS row ids[r] (a negative id counts from the end once, then ids are clamped into [0, PW(P_ROWS)); MODE_PAD:
// positions whose row is PW(P_PAD) are skipped and not counted). MODE_WEIGHTS: the row is first multiplied by weights[r] (combine(w, x), OP mul). Rows combine one by one
// in position order (arith.glsl's combine, OP from PW(P_OP)): from a base value (MODE_SELF, counted once for "mean":
// OUT's own, or PW(P_INIT) with MODE_INIT too), from PW(P_INIT) (MODE_INIT alone, not counted), else from the
// first row itself. MODE_MEAN (float add):
// mean_of(sum, count) at the end. A segment with nothing to combine gets PW(P_EMPTY), or keeps OUT's value
// (MODE_KEEP). No atomics on values, no sort: each output element is written once, by one invocation.
// One dispatch covers positions [PW(P_FIRST), PW(P_LAST)) of every segment (CPU devices: llvmpipe ends an
// invocation's loops after 65535 iterations, so the plan gives pieces of positions); a piece after the first
// (MODE_CARRY) continues from OUT's value where the segment had positions before it (counted: pieces never
// have MODE_PAD), and only the last piece (MODE_FINAL) divides ("mean") and writes empty segments.
// AUX: 32-bit words holding the offsets (PW(P_OFF_W) words each, from word PW(P_OFF_AT)), the ids (likewise
// P_IDS_W, P_IDS_AT) and the weights (elements of the data's type from word PW(P_W_AT)): four bindings, which every
// device has; SPLIT (devices binding six): the ids and the weights from buffers of their own (IDS, WTS); 64-bit offsets and ids
// are read as two words (no 64-bit types): negative ones clamp to 0, large ones to the limit.
// Element type: ELEM_KIND, ELEM_BYTES (arith.glsl); the operation is a parameter word (not a specialization
// constant: one module per element type serves every reduction, and the weights' multiply).
// MODE_VEC (rows of a multiple of VEC_ELEMS elements, row-major order): invocation i reduces VEC_ELEMS neighbouring
// columns (PW(P_TOTAL) = segments x COLS / VEC_ELEMS), reading 16 bytes of each row per load.
// ORDERS (float types' variants of their own, so the others carry no stack): the scatter orders other than
// row-major, over each segment's terms in position order (one piece: no MODE_CARRY): MODE_TREE combines the
// rows in reference.tree's pairwise tree (a stack of complete power-of-two subtrees, merged as a binary counter
// carries, then folded from the right), then into the base value; MODE_FIXED_POINT (add and mean of float types
// of at most 4 bytes) sums the base value and the rows as order="fixed-point" does (fixed_point.glsl, PW(P_FRAC)
// fraction bits: the call's), reading the rows twice: their largest exponent and specials, then their sum.
#define UNIT ELEM_BYTES
#define IDX64 0
#ifndef ORDERS
#define ORDERS 0
#endif
#include "units.glsl"
#include "workgroup.glsl"
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
layout(std430, binding = 1) restrict readonly buffer Aux { uint AUX[]; };
layout(std430, binding = 2) restrict readonly buffer Data { UNIT_T DATA[]; };
layout(std430, binding = 3) buffer Out { UNIT_T OUT[]; };
#if SPLIT       // devices binding 6 buffers: the ids and the weights in buffers of their own (no packing)
layout(std430, binding = 4) restrict readonly buffer Ids { uint IDS[]; };
layout(std430, binding = 5) restrict readonly buffer Weights { uint WTS[]; };
#define ID_WORD(w) IDS[w]
#define W_WORD(w) WTS[w]
#else
#define ID_WORD(w) AUX[w]
#define W_WORD(w) AUX[w]
#endif

// The data seen 16 bytes at a time (segments of scalars): VEC_ELEMS elements each
layout(std430, binding = 2) restrict readonly buffer Data4 { uvec4 DATA4[]; };
const uint VEC_ELEMS = 16u / ELEM_BYTES;

// the operation, chosen per dispatch (reduce_op.glsl's names; OP a variable here, not its specialization constant)
#define REDUCE_OP_GLSL
#define OP_ADD 0u
#define OP_MUL 1u
#define OP_MIN 2u
#define OP_MAX 3u
uint OP;
#include "arith.glsl"
#if ORDERS && ELEM_KIND >= 2 && ELEM_BYTES <= 4
#define FIXED_POINT 1
#include "fixed_point.glsl"
#endif

// parameter words (dmlgpu/plans/segment.py's names)
const uint P_TOTAL = 0u, P_COLS = 1u, P_OP = 2u, P_MODE = 3u, P_OFF_AT = 4u, P_OFF_W = 5u, P_IDS_AT = 6u,
           P_IDS_W = 7u, P_W_AT = 8u, P_FIXED = 9u, P_PAD = 10u, P_ROWS = 11u, P_LIMIT = 12u, P_FIRST = 13u,
           P_LAST = 14u, P_INIT = 15u, P_EMPTY = 17u, P_FRAC = 19u;
const uint MODE_IDS = 1u, MODE_FIXED = 2u, MODE_WEIGHTS = 4u, MODE_PAD = 8u, MODE_MEAN = 16u, MODE_INIT = 32u,
           MODE_SELF = 64u, MODE_KEEP = 128u, MODE_CARRY = 256u, MODE_FINAL = 512u, MODE_SIGNED = 1024u,
           MODE_OPEN_END = 2048u, MODE_TREE = 4096u, MODE_FIXED_POINT = 8192u, MODE_VEC = 16384u;

ELEM_T bits_at(uint w) {
#if ELEM_BYTES == 8
    return uvec2(P[w], P[w + 1u]);
#else
    return P[w];
#endif
}

// an offset or id (``width`` words at word ``at``): (in range, value); negative values give (false, 0), values of 2^32
// or more (false, 0xFFFFFFFF)
uint read_index(uint at, uint width, bool is_signed, out bool neg) {
    uint lo = AUX[at];
    neg = false;
    if (width == 2u) {
        uint hi = AUX[at + 1u];
        if (hi != 0u) {
            neg = is_signed && (hi >> 31) != 0u;
            return neg ? 0u : 0xFFFFFFFFu;
        }
        return lo;
    }
    neg = is_signed && (lo >> 31) != 0u;
    return neg ? 0u : lo;
}

// an id (``width`` words at word ``at``) resolved against ``rows``: a negative one counts from the end once (as
// dmlgpu's gathers resolve them), then it is clamped into [0, rows)
uint read_id(uint at, uint width, bool is_signed, uint rows) {
    uint lo = ID_WORD(at);
    uint hi = width == 2u ? ID_WORD(at + 1u) : (is_signed && (lo >> 31) != 0u ? 0xFFFFFFFFu : 0u);
    if (hi == 0u)
        return min(lo, rows - 1u);
    if (is_signed && hi == 0xFFFFFFFFu && (lo >> 31) != 0u) {
        uint m = 0u - lo;                         // -id
        return m <= rows ? rows - m : 0u;
    }
    return is_signed && (hi >> 31) != 0u ? 0u : rows - 1u;
}

uint bound(uint s, uint limit, bool is_signed) {
    uint w = P[P_OFF_W];
    bool neg;
    return min(read_index(P[P_OFF_AT] + s * w, w, is_signed, neg), limit);
}

ELEM_T weight(uint r) {
    uint at = P[P_W_AT];
#if ELEM_BYTES == 8
    return uvec2(W_WORD(at + 2u * r), W_WORD(at + 2u * r + 1u));
#elif ELEM_BYTES == 4
    return W_WORD(at + r);
#else
    uint b = r * ELEM_BYTES;
    return (W_WORD(at + (b >> 2u)) >> ((b & 3u) * 8u)) & ((1u << (8u * ELEM_BYTES)) - 1u);
#endif
}

// element j of 16 bytes of the data
ELEM_T elem_of(uvec4 v, uint j) {
#if ELEM_BYTES == 8
    return j == 0u ? v.xy : v.zw;
#elif ELEM_BYTES == 4
    return v[j];
#else
    uint b = j * ELEM_BYTES;
    return (v[b >> 2u] >> ((b & 3u) * 8u)) & ((1u << (8u * ELEM_BYTES)) - 1u);
#endif
}

// position r's row into ``row``: r itself, or (MODE_IDS) its id; false where that is the skipped one (MODE_PAD)
bool row_at(uint r, uint mode, out uint row) {
    row = r;
    if ((mode & MODE_IDS) != 0u) {
        row = read_id(P[P_IDS_AT] + r * P[P_IDS_W], P[P_IDS_W], (mode & MODE_SIGNED) != 0u, P[P_ROWS]);
        if ((mode & MODE_PAD) != 0u && row == P[P_PAD])
            return false;
    }
    return true;
}

// position r's term for column ``col`` into ``x``: its row's element (times its weight); false where its id is
// the skipped one (MODE_PAD)
bool term(uint r, uint mode, uint col, uint op, out ELEM_T x) {
    uint row;
    if (!row_at(r, mode, row))
        return false;
    x = LOAD_UNIT(DATA, row * P[P_COLS] + col);
    if ((mode & MODE_WEIGHTS) != 0u) {
        OP = OP_MUL;
        x = combine(weight(r), x);
        OP = op;
    }
    return true;
}

// the segment's end (process()'s running value ``acc``, ``have``, ``n`` after its terms): an empty one gets
// PW(P_EMPTY) or keeps OUT's value (MODE_KEEP); "mean" divides by n
void finish(uint i, uint mode, ELEM_T acc, bool have, uint n) {
    if (!have) {
        if ((mode & MODE_KEEP) == 0u)
            STORE_UNIT(OUT, i, bits_at(P_EMPTY));
        return;
    }
#if ELEM_KIND >= 2
    if ((mode & MODE_MEAN) != 0u)
        acc = mean_of(acc, n);
#endif
    STORE_UNIT(OUT, i, acc);
}

#if ORDERS
// order "tree" or "fixed-point" over positions [first, last) of output element i, after the base value (acc,
// have, n: process()'s; one piece)
void ordered(uint i, uint mode, uint col, uint first, uint last, ELEM_T acc, bool have, uint n) {
    uint op = OP;
    ELEM_T x;
#if FIXED_POINT
    if ((mode & MODE_FIXED_POINT) != 0u) {
        uint code = have ? code_of(acc) : 0u, flags = have ? special(acc) : 0u, terms = 0u;
        for (uint r = first; r < last; ++r)
            if (term(r, mode, col, op, x)) {
                code = max(code, code_of(x));
                flags |= special(x);
                ++terms;
            }
        if (terms == 0u) {                      // no update: the base value kept (or the empty segment's)
            finish(i, mode & ~MODE_MEAN, acc, have, n);
            return;
        }
        uint frac = P[P_FRAC];
        uvec2 sum = have && special(acc) == 0u ? fixed_of(acc, code >> 1, frac) : uvec2(0u);
        for (uint r = first; r < last; ++r)
            if (term(r, mode, col, op, x) && special(x) == 0u)
                sum = u64_add(sum, fixed_of(x, code >> 1, frac));
        finish(i, mode, fixed_result(sum, code, flags, frac), true, n + terms);
        return;
    }
#endif
    ELEM_T stack[32];                           // complete subtrees of 2^k terms, the oldest (largest) first
    uint depth = 0u, count = 0u;
    for (uint r = first; r < last; ++r)
        if (term(r, mode, col, op, x)) {
            ++count;
            for (int k = findLSB(count); k > 0; --k)    // a binary counter's carries: equal subtrees merge
                x = combine(stack[--depth], x);
            stack[depth++] = x;
        }
    if (count == 0u) {
        finish(i, mode, acc, have, n);
        return;
    }
    x = stack[--depth];
    while (depth > 0u)                          // the rest folded from the right
        x = combine(stack[--depth], x);
    finish(i, mode, have ? combine(acc, x) : x, true, n + count);
}
#endif

// one row's element x combined into the running value (acc, have, n: process()'s)
#define STEP(x) { ELEM_T x_ = (x); acc = have ? combine(acc, x_) : x_; have = true; ++n; }

// segment ``seg``'s positions [lo, hi) (of ``segments``)
uvec2 segment_span(uint seg, uint segments, uint mode) {
    bool is_signed = (mode & MODE_SIGNED) != 0u;
    if ((mode & MODE_FIXED) != 0u)
        return uvec2(seg * P[P_FIXED], seg * P[P_FIXED] + P[P_FIXED]);
    uint limit = P[P_LIMIT];
    uint lo = bound(seg, limit, is_signed);
    bool open_end = (mode & MODE_OPEN_END) != 0u && seg + 1u == segments;   // the last: to the limit
    return uvec2(lo, max(open_end ? limit : bound(seg + 1u, limit, is_signed), lo));
}

// output element o's running value before positions [first, hi) of its segment [lo, hi): the pieces' before it
// (MODE_CARRY), else the base value (OUT's, or P_INIT's: a base of zeros not read), else P_INIT's (not counted)
void start(uint o, uint mode, uvec2 span, uint first, out ELEM_T acc, out bool have, out uint n) {
    acc = bits_at(P_EMPTY);
    have = false;
    n = 0u;
    uint self_n = (mode & MODE_SELF) != 0u ? 1u : 0u;
    uint before = min(span.y, first) - span.x;       // positions of the segment in the pieces before
    if ((mode & MODE_CARRY) != 0u && before != 0u) {
        acc = LOAD_UNIT_ATOMIC(OUT, o);       // (1- and 2-byte elements: neighbours' stores share its word)
        have = true;
        n = self_n + before;
    } else if (self_n != 0u) {
        if ((mode & MODE_INIT) != 0u)
            acc = bits_at(P_INIT);
        else
            acc = LOAD_UNIT_ATOMIC(OUT, o);
        have = true;
        n = 1u;
    } else if ((mode & MODE_INIT) != 0u) {
        acc = bits_at(P_INIT);
        have = true;
    }
}

// MODE_VEC (rows of a multiple of VEC_ELEMS elements, row-major order): invocation i reduces VEC_ELEMS neighbouring
// columns, reading 16 bytes of each row at a time; each column's elements still combine one by one in position
// order (the bits of process()).
void process_vec(uint i) {
    uint cols = P[P_COLS], mode = P[P_MODE], op = P[P_OP];
    uint vcols = cols / VEC_ELEMS;
    uint seg = i / vcols, col = (i - seg * vcols) * VEC_ELEMS, o = seg * cols + col;
    uvec2 span = segment_span(seg, P[P_TOTAL] / vcols, mode);
    uint first = max(span.x, P[P_FIRST]), last = min(span.y, P[P_LAST]);
    ELEM_T acc[VEC_ELEMS];
    bool have;
    uint n;
    for (uint j = 0u; j < VEC_ELEMS; ++j)
        start(o + j, mode, span, first, acc[j], have, n);
    OP = op;
    bool weighted = (mode & MODE_WEIGHTS) != 0u;
    for (uint r = first; r < last; ++r) {
        uint row;
        if (!row_at(r, mode, row))
            continue;
        uvec4 v = DATA4[(row * cols + col) / VEC_ELEMS];
        ELEM_T w = weighted ? weight(r) : ELEM_T(0u);
        for (uint j = 0u; j < VEC_ELEMS; ++j) {
            ELEM_T x = elem_of(v, j);
            if (weighted) {
                OP = OP_MUL;
                x = combine(w, x);
                OP = op;
            }
            acc[j] = have ? combine(acc[j], x) : x;
        }
        have = true;
        ++n;
    }
    for (uint j = 0u; j < VEC_ELEMS; ++j) {
        if ((mode & MODE_FINAL) == 0u) {      // a piece before the last: the running value, if any
            if (have)
                STORE_UNIT(OUT, o + j, acc[j]);
        } else {
            finish(o + j, mode, acc[j], have, n);
        }
    }
}

void process(uint i) {
    uint cols = P[P_COLS], mode = P[P_MODE], op = P[P_OP];
    if ((mode & MODE_VEC) != 0u) {
        process_vec(i);
        return;
    }
    uint seg = i / cols, col = i - seg * cols;
    uvec2 span = segment_span(seg, P[P_TOTAL] / cols, mode);
    uint first = max(span.x, P[P_FIRST]), last = min(span.y, P[P_LAST]);
    ELEM_T acc;
    bool have;
    uint n;
    start(i, mode, span, first, acc, have, n);
    OP = op;
#if ORDERS
    if ((mode & (MODE_TREE | MODE_FIXED_POINT)) != 0u) {
        ordered(i, mode, col, first, last, acc, have, n);
        return;
    }
#endif
    uint r = first;
    if ((mode & MODE_IDS) == 0u && cols == 1u) {   // segments of scalars: 16 bytes of the segment per load
        for (; r < last && (r & (VEC_ELEMS - 1u)) != 0u; ++r)
            STEP(LOAD_UNIT(DATA, r));
        for (; r + VEC_ELEMS <= last; r += VEC_ELEMS) {
            uvec4 v = DATA4[r / VEC_ELEMS];
            for (uint j = 0u; j < VEC_ELEMS; ++j)
                STEP(elem_of(v, j));
        }
    }
    for (; r < last; ++r) {
        ELEM_T x;
        if (term(r, mode, col, op, x))
            STEP(x);
    }
    if ((mode & MODE_FINAL) == 0u) {          // a piece before the last: the running value, if any
        if (have)
            STORE_UNIT(OUT, i, acc);
        return;
    }
    finish(i, mode, acc, have, n);
}

void main() {
    uint total = P[P_TOTAL];
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total;) {
        process(i);
        if (total - i <= step) break;
        i += step;
    }
}
