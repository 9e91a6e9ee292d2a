#version 450
#extension GL_GOOGLE_include_directive : require
#if !FEW
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
#if STAGE == 1 || STAGE == 2
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define COMBINE 1
#endif
#endif
// Scatter reduction "add" and "mean" of floats with order="fixed-point" (dmlgpu/plans/reduction_fixed.py): each
// target's terms (its updates, and its own value with include_self) summed as 64-bit fixed-point integers
// scaled to the target's largest exponent, so the sum does not depend on the order in which they land.
// Per output element t (its offset; slots sized for the output's span; CODE only grows in stages 0-1, so a
// plain read that shows it at least a term's code spares that term's atomicMax):
//   CODE[t]   0: no term yet; else max over its terms of (scale exponent << 1 | the term is not -0), where a
//             finite term's scale exponent is max(its exponent field, 1); an infinity or NaN counts as 3
//   FLAGS[t]  the specials seen: F_NAN, F_POS_INF, F_NEG_INF (atomicOr, only by special terms)
//   COUNT[t]  its updates (reduction "mean")
//   SUM[t]    the sum of its finite terms' fixed-point values, two's complement, 64 bits
// A finite term v of scale exponent e and significand sig (hidden bit included) is the integer
// round(sig * 2^(e - E + P_FRAC)), to nearest even, negated for a negative v, E = CODE[t] >> 1.
// STAGE 0 (FEW only, include_self): each update element's target takes its own value's code (atomicMax);
//       1: each update element's code (and, without FEW, its target's own value's with include_self), its
//          flags and count;
//       2: each update element's fixed-point value is added into SUM[target] (64-bit atomicAdd; FEW: two
//          32-bit atomicAdds, the low word's carry counted by the invocation whose add wrapped it: the same
//          sum modulo 2^64 in any order);
//       without FEW (COMBINE), stages 1 and 2 first combine the updates of a subgroup whose target is its first
//          active invocation's (as scatter_minmax.comp does): one atomic for them, of their max, count and
//          exact sum (the 64-bit values as limbs of 22, 22 and 20 bits, each limb's subgroup sum below 2^32,
//          put together modulo 2^64): a target that many updates share takes few atomics, with the same bits;
//       3: one invocation per target (the one whose atomicExchange takes CODE[t] back to 0) adds its own
//          value (include_self), converts the sum once to the element type (fmt_round: one rounding), takes
//          the mean (mean_of), writes it, and puts FLAGS, COUNT and SUM back to 0: the slots are zeroed
//          scratch (Device.zeroed), left zero;
//       4: stage 3 over the output's offsets 0 .. P_TOTAL - 1 instead of the updates (no index read, no
//          atomic: where the span is at most the update elements), each offset with a nonzero CODE.
// Specials: a NaN term, or both infinities: the negative quiet NaN (FMT_QNAN | FMT_SIGN); else an infinity:
// it. An exact zero sum: -0 if every term is -0 (CODE[t] == 2), else +0.
// Bindings: 0 parameters, 1 indices, then without FEW 2 output, 3 updates, 4 SUM (uint64_t), 5 the other
// slots (CODE at 0, FLAGS at P_SPAN, COUNT at 2 P_SPAN); FEW (no 64-bit types, 4 storage buffers): 2 the
// output (stages 0, 3, 4) or the updates (stages 1, 2), 3 all the slots as words: SUM (low, high) at 0, CODE at
// 2 P_SPAN, FLAGS at 3 P_SPAN, COUNT at 4 P_SPAN. ELEM_KIND, ELEM_BYTES as arith.glsl (OP: add).
#define UNIT ELEM_BYTES
#include "units.glsl"
#include "bindings.glsl"
#if !FEW || STAGE == 0 || STAGE >= 3
layout(std430, binding = 2) restrict buffer Data { UNIT_T DATA[]; };
#endif
#if !FEW
layout(std430, binding = 3) restrict readonly buffer Dense { UNIT_T DENSE[]; };
layout(std430, binding = 4) restrict buffer Sums { uint64_t SUMS[]; };
layout(std430, binding = 5) restrict buffer Slots { uint SLOTS[]; };
#define META_BASE 0u
#else
#if STAGE == 1 || STAGE == 2
layout(std430, binding = 2) restrict readonly buffer Dense { UNIT_T DENSE[]; };
#endif
layout(std430, binding = 3) restrict buffer Slots { uint SLOTS[]; };
#define META_BASE (2u * PW(P_SPAN))
#endif
#include "index_map.glsl"
#include "arith.glsl"
#include "fixed_point.glsl"
const uint P_SPAN = P_END, P_FX_MODE = P_END + 1u, P_FRAC = P_END + 2u;   // reduction_fixed.py's words
const uint MODE_EXCLUDE_SELF = 1u, MODE_MEAN = 2u;                          // (reduction.py's MODE_*)
#define CODE(t) SLOTS[META_BASE + (t)]
#define FLAGS(t) SLOTS[META_BASE + PW(P_SPAN) + (t)]
#define COUNT(t) SLOTS[META_BASE + 2u * PW(P_SPAN) + (t)]

bool include_self() { return (PW(P_FX_MODE) & MODE_EXCLUDE_SELF) == 0u; }

void raise_code(uint t, uint code) {   // atomicMax, skipped where the slot holds as much already (a stale read
    if (CODE(t) < code)                 // is an older, smaller value: then the atomic runs)
        atomicMax(CODE(t), code);
}

void process(OFF_T i) {
#if STAGE == 4
    uint t = uint(i);
#else
    Offsets o = map_offsets(i);
    uint t = uint(o.data);
#endif
#if STAGE == 0
    raise_code(t, code_of(LOAD_UNIT(DATA, t)));
#elif STAGE == 1
    uint u = LOAD_UNIT(DENSE, o.dense);
    uint code = code_of(u);
#if !FEW
    if (include_self())
        code = max(code, code_of(LOAD_UNIT(DATA, t)));
#endif
    uint flag = special(u);
    if (flag != 0u)
        atomicOr(FLAGS(t), flag);
    bool mean = (PW(P_FX_MODE) & MODE_MEAN) != 0u;
#if COMBINE
    if (t == subgroupBroadcastFirst(t)) {
        uint most = subgroupMax(code), n = subgroupAdd(1u);
        if (subgroupElect()) {
            raise_code(t, most);
            if (mean)
                atomicAdd(COUNT(t), n);
        }
        return;
    }
#endif
    raise_code(t, code);
    if (mean)
        atomicAdd(COUNT(t), 1u);
#elif STAGE == 2
    uint u = LOAD_UNIT(DENSE, o.dense);
    uvec2 f = special(u) != 0u ? uvec2(0u) : fixed_of(u, CODE(t) >> 1, PW(P_FRAC));
#if COMBINE
    if (t == subgroupBroadcastFirst(t)) {
        uint l0 = subgroupAdd(f.x & 0x3FFFFFu), l1 = subgroupAdd((f.x >> 22) | ((f.y & 0xFFFu) << 10));
        uint l2 = subgroupAdd(f.y >> 12);
        if (subgroupElect()) {
            uvec2 s = u64_add(u64_add(uvec2(l0, 0u), u64_shl(uvec2(l1, 0u), 22u)), u64_shl(uvec2(l2, 0u), 44u));
            if (u64_nz(s))
                atomicAdd(SUMS[t], uint64_t(s.x) | (uint64_t(s.y) << 32u));
        }
        return;
    }
#endif
    if (!u64_nz(f))
        return;
#if FEW
    uint old = atomicAdd(SLOTS[2u * t], f.x);
    uint high = f.y + (old + f.x < old ? 1u : 0u);          // the carry out of the low word
    if (high != 0u)
        atomicAdd(SLOTS[2u * t + 1u], high);
#else
    atomicAdd(SUMS[t], uint64_t(f.x) | (uint64_t(f.y) << 32u));
#endif
#else
#if STAGE == 4
    uint code = CODE(t);
    if (code == 0u)
        return;                                             // no update
    CODE(t) = 0u;
#else
    if (CODE(t) == 0u)
        return;                                             // (taken already: spares the atomic)
    uint code = atomicExchange(CODE(t), 0u);
    if (code == 0u)
        return;                                             // another invocation took this target
#endif
    uint flags = FLAGS(t);
    if (flags != 0u)
        FLAGS(t) = 0u;
    uint n = 0u;
    if ((PW(P_FX_MODE) & MODE_MEAN) != 0u) {
        n = COUNT(t);
        COUNT(t) = 0u;
    }
#if FEW
    uvec2 s = uvec2(SLOTS[2u * t], SLOTS[2u * t + 1u]);
    if (u64_nz(s)) {
        SLOTS[2u * t] = 0u;
        SLOTS[2u * t + 1u] = 0u;
    }
#else
    uint64_t s64 = SUMS[t];
    uvec2 s = uvec2(uint(s64), uint(s64 >> 32u));
    if (u64_nz(s))
        SUMS[t] = 0ul;
#endif
    if (include_self()) {
        uint own = LOAD_UNIT(DATA, t);
        uint flag = special(own);
        flags |= flag;
        if (flag == 0u)
            s = u64_add(s, fixed_of(own, code >> 1, PW(P_FRAC)));
        ++n;
    }
    uint r = fixed_result(s, code, flags, PW(P_FRAC));
    if ((PW(P_FX_MODE) & MODE_MEAN) != 0u)
        r = mean_of(r, n);
    STORE_UNIT(DATA, t, r);
#endif
}
#include "grid_loop.glsl"
