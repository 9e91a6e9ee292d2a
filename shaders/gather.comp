#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// dense[i] = data[map(i)]: every gather, and the strided copy (tuple size 0).
// VEC (units of 1 to 8 bytes, a packed dense tensor): iteration w writes the VEC bytes w of the dense tensor
// (VEC: 4 or 16), its VEC / UNIT units decoded once and then stepped along the innermost dimension
// (index_map.glsl's advance), their index loads, then their data loads, then the one store. TUPLE_K: the
// tuple size fixed (index_map.glsl's data_offset). Else one unit per iteration, or (FLAG_ROWS, CPU
// devices) one row of the innermost dimension per iteration, or (RUN_UNROLL, GPUs: rows of 16-byte units)
// several units of a row per invocation, below.
// The ADDR variants (tensors held in several blocks, maps under 2^32 units: 32-bit offsets) and the WIDE ones
// (maps past 2^32 units: 64-bit offsets) have the same paths. They reach the tensors through their blocks' device
// addresses (index_map.glsl's place), finding the block once per unit (data loads), per group of VEC bytes (a
// group never straddles a block), per invocation of a RUN_UNROLL variant (again for a unit past the first
// one's block or row), or per run of a row inside one block of both tensors (FLAG_ROWS: a row that
// straddles a block boundary is copied as several runs). In that row loop a tensor held in one block is reached
// through its binding, as in the 32-bit kernels; elsewhere it is not, because CPU devices (lavapipe) run both
// sides of such a branch for every unit: measured slower there. On an H200 (gathers of 8 KiB rows from a 20 GiB
// table, the indices and output each in one block), reaching those two through their bindings made the one-unit
// ADDR kernel 1.02x as fast and the RUN_UNROLL one 0.87x (both with their parameters in a storage buffer).
#include "units.glsl"
#include "bindings.glsl"
#define WIDE_LISTS 1             // ADDR variants: the block lists in the WIDE layout (index_map.glsl)

// MOVE_T: a unit as the kernel loads and stores it: UNIT_T, except that the ADDR and WIDE variants move 8- and
// 16-byte units as 64-bit components (uint64_t, u64vec2). lavapipe accesses device addresses one component at
// a time in a loop over its SIMD lanes: half the components made the row gather 1.4x faster there; a GPU makes
// the same 8- or 16-byte access either way.
#if ADDRESSED && UNIT == 16
#define MOVE_T u64vec2
#elif ADDRESSED && UNIT == 8
#define MOVE_T uint64_t
#else
#define MOVE_T UNIT_T
#endif
#if NARROW      // 1- and 2-byte units moved as such (storageBuffer8BitAccess / storageBuffer16BitAccess)
#if UNIT == 1
#extension GL_EXT_shader_8bit_storage : require
#define NARROW_T uint8_t
#else
#extension GL_EXT_shader_16bit_storage : require
#define NARROW_T uint16_t
#endif
layout(std430, binding = 2) restrict readonly buffer Data { NARROW_T DATA[]; };
#else
layout(std430, binding = 2) restrict readonly buffer Data { MOVE_T DATA[]; };
#endif
#if NARROW
layout(std430, binding = 3) restrict writeonly buffer Dense { NARROW_T DENSE[]; };
#elif VEC == 16
layout(std430, binding = 3) restrict buffer Dense { uvec4 DENSE[]; };
#elif VEC == 4
layout(std430, binding = 3) restrict buffer Dense { uint DENSE[]; };
#else
layout(std430, binding = 3) restrict buffer Dense { MOVE_T DENSE[]; };
#endif
#if WINDOW
#define PARAMS_OWN 4u            // P_WINDOW's words (in the uniform buffer after the index map's)
#endif
#if !ADDRESSED && !WINDOW
// mode="raise" checked here (FLAG_RAISE, plans/index_check.py): the dense tensor's buffer holds a report word
// past its units, at word PW(P_STATUS), zero before the kernel; each index outside its range makes it at least
// ~(its position), so that it ends as ~(the first one's), read by index_check.comp's pass 1 (C_FETCH 1). (On an
// H200 the gather's GPU time is the same as without the check; keeping each invocation's least bad position
// in a register and reporting it once, after its loop, measured the same.) Not in the WINDOW variants, whose
// dispatches write one output without barriers between them (plan.GatherPlan.windows: they never check).
layout(std430, binding = 3) buffer Status { uint STATUS[]; };
#define INDEX_REPORT(pos) atomicMax(STATUS[PW(P_STATUS)], ~uint(pos))
#endif
#include "index_map.glsl"
#if WINDOW
// WINDOW (a define: the row loop of CPU devices on a data tensor held in several blocks, one dispatch per block,
// bound to it: plan.GatherPlan): the units [PW(P_WINDOW), PW(P_WINDOW + 1)) of the data tensor are those its
// bound block holds; each row copies its part of them (a row straddling blocks is copied by two dispatches).
const uint P_WINDOW = P_END;
#endif

const uint LOG2_UNIT = UNIT == 16 ? 4u : UNIT == 8 ? 3u : UNIT == 4 ? 2u : UNIT == 2 ? 1u : 0u;

#if ADDRESSED
layout(buffer_reference, std430, buffer_reference_align = UNIT) buffer UnitsRef { MOVE_T v[]; };
#endif

// Unit ``off`` of the data tensor. In ADDR and WIDE variants 1- and 2-byte units come from their 32-bit word at
// the unit's byte address rounded down (blocks start 4-byte aligned), so that no byte offset is formed: it may
// pass 2^32 in ADDR variants.
MOVE_T load_data(OFF_T off) {
#if ADDRESSED
    uint64_t a = place(SLOT_DATA, off, LOG2_UNIT).address;
#if UNIT >= 4
    return UnitsRef(a).v[0];
#else
    return (WordRef(a & ~uint64_t(3u)).v >> ((uint(a) & 3u) * 8u)) & UNIT_MASK;
#endif
#elif NARROW
    return uint(DATA[off]);
#else
    return LOAD_UNIT(DATA, off);
#endif
}

// FLAG_FILL: the unit that a tuple out of range reads (data_offset: NO_OFFSET), from words P_FILL.
MOVE_T fill_unit() {
    uint w0 = uint(PW(P_FILL)), w1 = uint(PW(P_FILL + 1u)), w2 = uint(PW(P_FILL + 2u)), w3 = uint(PW(P_FILL + 3u));
#if UNIT == 16 && ADDRESSED
    return u64vec2(uint64_t(w0) | (uint64_t(w1) << 32u), uint64_t(w2) | (uint64_t(w3) << 32u));
#elif UNIT == 16
    return uvec4(w0, w1, w2, w3);
#elif UNIT == 8 && ADDRESSED
    return uint64_t(w0) | (uint64_t(w1) << 32u);
#elif UNIT == 8
    return uvec2(w0, w1);
#elif UNIT == 4
    return w0;
#else
    return w0 & UNIT_MASK;
#endif
}

// Unit ``off`` of the data tensor, or the fill unit where ``off`` is NO_OFFSET (FLAG_FILL).
MOVE_T load_or_fill(OFF_T off) {
    if (off == NO_OFFSET)
        return fill_unit();
    return load_data(off);
}

#if VEC
const uint PER = VEC / UNIT;     // units per iteration (VEC: 4 or 16 bytes of the dense tensor)
const uint LOG2_VEC = VEC == 16 ? 4u : 2u;

// Group ``g`` (an lvalue: uvec4 for VEC 16, uint for VEC 4) = v, the units of its first n of PER. A last, partial
// group writes only the words that hold its units, and keeps the other bytes of a partial last word (no other
// iteration writes them).
#if VEC == 16
#define STORE_GROUP(g, v, n) \
    if (n == PER) { \
        g = v; \
    } else { \
        [[unroll]] for (uint k = 0u; k < 4u; ++k) { \
            uint nbytes = n * UNIT; \
            if (4u * k + 4u <= nbytes) \
                g[k] = v[k]; \
            else if (4u * k < nbytes) \
                g[k] = (g[k] & (0xFFFFFFFFu << ((nbytes & 3u) * 8u))) | v[k]; \
        } \
    }
#else
#define STORE_GROUP(g, v, n) \
    if (n == PER) \
        g = v.x; \
    else \
        g = (g & (0xFFFFFFFFu << (n * UNIT * 8u))) | v.x;
#endif

#if ADDRESSED
#if VEC == 16
layout(buffer_reference, std430, buffer_reference_align = 16) buffer GroupRef { uvec4 v; };
#else
layout(buffer_reference, std430, buffer_reference_align = 4) buffer GroupRef { uint v; };
#endif
#endif

void store_group(OFF_T w, uvec4 v, uint n) {
#if ADDRESSED
    GroupRef g = GroupRef(place(SLOT_DENSE, w, LOG2_VEC).address);
    STORE_GROUP(g.v, v, n)
#else
    STORE_GROUP(DENSE[w], v, n)
#endif
}

void process(OFF_T w) {
    OFF_T first = w * PER;
    uint n = uint(min(OFF_T(PER), PW(P_UNITS) - first));
    Position p = locate(first);
    OFF_T offset[PER];               // the units' data offsets first (their index loads), then their loads
    [[unroll]] for (uint j = 0u; j < PER; ++j) {
        if (j < n) {
            if (j > 0u)
                advance(p, first + j);
            offset[j] = data_offset(p);
        }
    }
    uvec4 v = uvec4(0u);
    [[unroll]] for (uint j = 0u; j < PER; ++j) {
        if (j < n) {
            MOVE_T u = load_or_fill(offset[j]);
#if UNIT == 8 && ADDRESSED
            v[2u * j] = uint(u);
            v[2u * j + 1u] = uint(u >> 32u);
#elif UNIT == 8
            v[2u * j] = u.x;
            v[2u * j + 1u] = u.y;
#elif UNIT == 4
            v[j] = u;
#else
            v[(j * UNIT) >> 2u] |= u << (((j * UNIT) & 3u) * 8u);
#endif
        }
    }
    store_group(w, v, n);
}
#else

// Unit ``off`` of the dense tensor = v; 1- and 2-byte units by atomics on their own bits (as units.glsl's
// STORE_UNIT), in ADDR and WIDE variants at their byte address (see load_data).
void store_dense(OFF_T off, MOVE_T v) {
#if ADDRESSED
    uint64_t a = place(SLOT_DENSE, off, LOG2_UNIT).address;
#if UNIT >= 4
    UnitsRef(a).v[0] = v;
#else
    uint sh = (uint(a) & 3u) * 8u;
    WordRef w = WordRef(a & ~uint64_t(3u));
    atomicAnd(w.v, ~(UNIT_MASK << sh));
    atomicOr(w.v, v << sh);
#endif
#elif NARROW
    DENSE[off] = NARROW_T(v);
#else
    STORE_UNIT(DENSE, off, v);
#endif
}

#define COPY_RUN(DST, SRC, m) \
    for (uint k = 0u; k < m; ++k) \
        DST = SRC;

void process(OFF_T i) {
#if UNIT >= 4
    if ((PW(P_FLAGS) & FLAG_ROWS) != 0u) {   // row mode: iteration i moves row i of the innermost dimension whole
        uint n = uint(PW(P_SHAPE + uint(PW(P_RANK)) - 1u));
        Offsets o = map_offsets(i * n);
        if (o.data == NO_OFFSET) {           // FLAG_FILL: the row's tuple is out of range
            MOVE_T f = fill_unit();
            for (uint k = 0u; k < n; ++k)
                store_dense(o.dense + k, f);
            return;
        }
#if ADDRESSED
        uint data_b = block_log2(SLOT_DATA), dense_b = block_log2(SLOT_DENSE);
        bool data_one = data_b >= 32u, dense_one = dense_b >= 32u;
        for (uint j = 0u; j < n;) {          // the runs of the row inside one block of each tensor
            Place s = place_in(SLOT_DATA, data_b, o.data + j, LOG2_UNIT);
            Place d = place_in(SLOT_DENSE, dense_b, o.dense + j, LOG2_UNIT);
            uint m = min(n - j, min(s.left, d.left));
            UnitsRef src = UnitsRef(s.address), dst = UnitsRef(d.address);
            uint from = uint(o.data) + j, to = uint(o.dense) + j;     // (used for one-block tensors only)
            if (dense_one && data_one) {
                COPY_RUN(DENSE[to + k], DATA[from + k], m)
            } else if (dense_one) {
                COPY_RUN(DENSE[to + k], src.v[k], m)
            } else if (data_one) {
                COPY_RUN(dst.v[k], DATA[from + k], m)
            } else {
                COPY_RUN(dst.v[k], src.v[k], m)
            }
            j += m;
        }
#else
        COPY_RUN(DENSE[o.dense + k], DATA[o.data + k], n)
#endif
        return;
    }
#endif
    Offsets o = map_offsets(i);
    store_dense(o.dense, load_or_fill(o.data));
}
#endif

#if RUN_UNROLL
#if UNIT != 16
#error "RUN_UNROLL moves 16-byte units"
#endif
// RUN_UNROLL (a define: whole rows of 16-byte units, GPUs): the loop's invocations go in blocks of RUN_LANES
// (lanes of a subgroup), and a block takes RUN_LANES x RUN_UNROLL adjacent units: its invocation at ``lane``
// moves units base + lane + k RUN_LANES (k < RUN_UNROLL), so that each of its loads is coalesced with the
// block's others, and all of them are in flight before the first store. An invocation decodes its first unit
// (one index load) and reaches the next ones from it where they lie further along the same row (and, in ADDR
// and WIDE variants, inside the same blocks); a unit of another row is decoded afresh. Every RUN_UNROLL variant
// reads its parameters from a uniform buffer (with the block lists in ADDR and WIDE ones: UNIFORM_WORDS): with
// them in a storage buffer, the ADDR one ran at 0.69x from a 20 GiB table on an H200 (bench/RESULTS.md).
const uint RUN_SPAN = RUN_LANES * RUN_UNROLL;

void run(OFF_T first, OFF_T count) {   // units first + k RUN_LANES that are less than ``count`` past first
    Position p = locate(first);
    Offsets o = Offsets(p.dense, data_offset(p));
    OFF_T n = PW(P_SHAPE + uint(PW(P_RANK)) - 1u);
#if ADDRESSED
    Place s = place(SLOT_DATA, o.data, 4u), t = place(SLOT_DENSE, o.dense, 4u);
    uint64_t to[RUN_UNROLL];
#else
    OFF_T to[RUN_UNROLL];
#endif
    MOVE_T v[RUN_UNROLL];
    // how far the units go, and how far the row does, in 32 bits (the WIDE variant's 64-bit compares per unit
    // cost it 7 % from a 2 GiB table: bench/RESULTS.md, issue 23)
    uint ahead_max = uint(min(count, OFF_T(RUN_SPAN))), row_left = uint(min(n - p.inner, OFF_T(RUN_SPAN)));
    [[unroll]] for (uint k = 0u; k < RUN_UNROLL; ++k) {
        uint ahead = k * RUN_LANES;
        if (ahead < ahead_max) {
            bool same = ahead < row_left;
            Offsets q = Offsets(o.dense + ahead, o.data + ahead);
            if (!same)
                q = map_offsets(first + ahead);
#if ADDRESSED
            uint64_t from = same && ahead < s.left ? s.address + (uint64_t(ahead) << 4u)
                                                   : place(SLOT_DATA, q.data, 4u).address;
            to[k] = same && ahead < t.left ? t.address + (uint64_t(ahead) << 4u) : place(SLOT_DENSE, q.dense, 4u).address;
            v[k] = UnitsRef(from).v[0];
#else
            to[k] = q.dense;
            v[k] = DATA[q.data];
#endif
        }
    }
    [[unroll]] for (uint k = 0u; k < RUN_UNROLL; ++k) {
        if (k * RUN_LANES < ahead_max) {
#if ADDRESSED
            UnitsRef(to[k]).v[0] = v[k];
#else
            DENSE[to[k]] = v[k];
#endif
        }
    }
}

void main() {
    OFF_T total = PW(P_TOTAL);
    uint lane = gl_LocalInvocationID.x % RUN_LANES;
    OFF_T blocks = (total - 1u) / RUN_SPAN + 1u;          // total >= 1
    OFF_T step = (gl_NumWorkGroups.x * gl_WorkGroupSize.x) / RUN_LANES;
#if WIDE
    if (blocks <= 0xFFFFFFFFu - step) {   // block numbers in 32 bits (maps of up to 2^39 units)
        for (uint b = gl_GlobalInvocationID.x / RUN_LANES; b < uint(blocks); b += uint(step)) {
            OFF_T base = OFF_T(b) * RUN_SPAN;
            if (lane < total - base)
                run(base + lane, total - base - lane);
        }
        return;
    }
#endif
    for (OFF_T b = gl_GlobalInvocationID.x / RUN_LANES; b < blocks; b += step) {
        OFF_T base = b * RUN_SPAN;                        // < total: no wrap
        if (lane < total - base)
            run(base + lane, total - base - lane);
    }
}
#elif WINDOW
// WINDOW_LANES invocations (a define) take each row together, their units WINDOW_LANES apart: on CPU devices an
// invocation is a SIMD lane, and a lane left idle in a loop that others run costs as much as a busy one (one
// row per invocation, with rows of random blocks: each dispatch took nearly as long as a gather from one block).
void main() {
    uint total = PW(P_TOTAL), n = PW(P_SHAPE + PW(P_RANK) - 1u), lo = PW(P_WINDOW), hi = PW(P_WINDOW + 1u);
    uint lane = gl_GlobalInvocationID.x % WINDOW_LANES, step = gl_NumWorkGroups.x * (WORKGROUP_SIZE / WINDOW_LANES);
    for (uint r = gl_GlobalInvocationID.x / WINDOW_LANES; r < total;) {
        Offsets o = map_offsets(r * n);
        uint from = max(o.data, lo), to = min(o.data + n, hi), dense = o.dense - o.data;
        for (uint k = from + lane; k < to; k += WINDOW_LANES)
            DENSE[dense + k] = DATA[k - lo];
        if (total - r <= step) break;
        r += step;
    }
}
#else
#include "grid_loop.glsl"
#endif
