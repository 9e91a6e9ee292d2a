#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// dense[i] = data[map(i)]: every gather, and the strided copy (tuple size 0).
// VEC (units of 1 to 8 bytes, a packed dense tensor): iteration w writes the VEC bytes w of the dense tensor
// (VEC: 4 or 16), its VEC / UNIT units decoded once and then stepped along the innermost dimension
// (index_map.glsl's advance), their index loads, then their data loads, then the one store. TUPLE_K: the
// tuple size fixed (index_map.glsl's data_offset). Else one unit per iteration, or (FLAG_ROWS, CPU
// devices) one row of the innermost dimension per iteration.
// The ADDR variants (tensors held in several blocks, maps under 2^32 units: 32-bit offsets) and the WIDE ones
// (maps past 2^32 units: 64-bit offsets) have the same paths. They reach the tensors through their blocks' device
// addresses (index_map.glsl's place), finding the block once per unit (data loads), per group of VEC bytes (a
// group never straddles a block), or per run of a row inside one block of both tensors (FLAG_ROWS: a row that
// straddles a block boundary is copied as several runs). In that row loop a tensor held in one block is reached
// through its binding, as in the 32-bit kernels; elsewhere it is not, because CPU devices (lavapipe) run both
// sides of such a branch for every unit: measured slower there (on a GPU the block lookup of a one-block tensor
// adds no dependent load: its address does not depend on the data; not measured).
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
#include "index_map.glsl"

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
            MOVE_T u = load_data(offset[j]);
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
    store_dense(o.dense, load_data(o.data));
}
#endif
#include "grid_loop.glsl"
