// combine(acc, x): one step of a scatter reduction on raw element bits, for one element type chosen at compile
// time and one operation chosen at pipeline creation (OP, a specialization constant: reduce_op.glsl):
//   ELEM_KIND  0 unsigned integer, 1 signed integer, 2 IEEE float (float16, float32, float64),
//              3 bfloat16, 4 float8_e4m3fn, 5 float8_e5m2 (ml_dtypes' types)
//   ELEM_BYTES 1, 2, 4 or 8 (values of 1 and 2 bytes are held in the low bits of a uint, zero-extended;
//              8-byte values are uvec2 (low word, high word))
//   OP         0 add, 1 mul, 2 min, 3 max
// Integers wrap (two's complement, like NumPy's fixed-width arithmetic). Floats round to nearest even:
// float16 through an exact conversion to float32 (one float32 operation, then one rounding to float16: the
// double rounding is innocuous since 24 >= 2 * 11 + 2, and float16 operands never give float32
// subnormals), float32 by the device's own add and mul (a device may flush float32 subnormals), float64
// in software (softfloat64.glsl). min/max compare the bits (no flushing): a NaN operand wins (acc's when
// both are), and -0 < +0 (IEEE 754-2019 minimum/maximum). NaN results never depend on the device:
// a NaN operand comes back quieted (acc's first; float16 add and mul: x's first, as NumPy's float16 loops
// give it), an invalid operation gives x86's default NaN.
// bfloat16 and float8 (ELEM_KIND 3-5) give ml_dtypes' bits (its float32 operation, then its rounding):
// the exact result rounded once to the type (the same bits: 24 >= 2p + 2, and float32 subnormal
// intermediates are exact sums or round the same way), overflow to infinity (float8_e4m3fn, which has none:
// to NaN). float8 operands and results are never float32 subnormals, so the device's float32 arithmetic
// is exact there; bfloat16's subnormals are float32 subnormals, which a device may flush: a bfloat16
// operation with a subnormal operand or a zero or subnormal float32 result is redone in software
// (softfloat64.glsl, then one rounding), so no device flushes. NaN results are the type's quiet NaN
// (bfloat16 0x7FC0, e4m3fn 0x7F, e5m2 0x7E) with a sign as ml_dtypes gives it on x86: x's sign if x is a NaN,
// else acc's; but float8 add: acc's sign if acc is a NaN, else positive. An invalid operation (inf - inf,
// 0 * inf) gives the negative quiet NaN.
// mean_of(s, n) (float add variants: reduction "mean"): s / n rounded once to nearest even, in integer
// arithmetic (no device division, which Vulkan does not round correctly).
#include "softfloat64.glsl"

#if ELEM_BYTES == 8
#define ELEM_T uvec2
#else
#define ELEM_T uint
#endif

#include "reduce_op.glsl"

// ---- float formats (ELEM_KIND >= 2): exponent and fraction bits, bias; FMT_FN: no infinity, NaN all ones ----
#if ELEM_KIND == 2 && ELEM_BYTES == 2
#define FMT_EB 5
#define FMT_MB 10
#elif ELEM_KIND == 2 && ELEM_BYTES == 4
#define FMT_EB 8
#define FMT_MB 23
#elif ELEM_KIND == 3
#define FMT_EB 8
#define FMT_MB 7
#elif ELEM_KIND == 4
#define FMT_EB 4
#define FMT_MB 3
#define FMT_FN 1
#elif ELEM_KIND == 5
#define FMT_EB 5
#define FMT_MB 2
#endif
#ifndef FMT_FN
#define FMT_FN 0
#endif
#ifdef FMT_MB
const uint FMT_EMASK = (1u << FMT_EB) - 1u;          // exponent field, all ones
const uint FMT_MMASK = (1u << FMT_MB) - 1u;          // fraction field
const int FMT_BIAS = (1 << (FMT_EB - 1)) - 1;
const uint FMT_SIGN = 1u << (FMT_EB + FMT_MB);
const uint FMT_QNAN = FMT_FN != 0 ? FMT_SIGN - 1u : (FMT_EMASK << FMT_MB) | (1u << (FMT_MB - 1u));

bool fmt_is_nan(uint v) {
    uint e = (v >> FMT_MB) & FMT_EMASK, m = v & FMT_MMASK;
    return e == FMT_EMASK && (FMT_FN != 0 ? m == FMT_MMASK : m != 0u);
}

// The value 1.frac * 2^(e - FMT_BIAS) (frac: 32 fraction bits, ``sticky``: a nonzero bit below them; e: the
// format's exponent field, any int) rounded to nearest even in the format: subnormals, overflow to infinity
// (FMT_FN: to NaN). Returns the bits without the sign bit, OR-ed with ``sign`` << (FMT_EB + FMT_MB).
uint fmt_round(uint sign, int e, uint frac, bool sticky) {
    uint sign_bits = sign << (FMT_EB + FMT_MB);
    if (e >= int(FMT_EMASK) + FMT_FN)
        return sign_bits | (FMT_FN != 0 ? FMT_QNAN : FMT_EMASK << FMT_MB);
    uint r, rem;                                   // rem: the bits rounded off, left-aligned
    if (e >= 1) {
        r = (uint(e) << FMT_MB) | (frac >> (32u - FMT_MB));
        rem = frac << FMT_MB;
    } else {
        if (e < -int(FMT_MB)) return sign_bits;    // below half the smallest subnormal
        uint m = 0x80000000u | (frac >> 1);        // 1.frac, 31 fraction bits
        sticky = sticky || (frac & 1u) != 0u;
        uint shift = uint(32 - int(FMT_MB) - e);   // 32 - FMT_MB .. 32
        r = shift == 32u ? 0u : m >> shift;
        rem = shift == 32u ? m : m << (32u - shift);
    }
    if (rem > 0x80000000u || (rem == 0x80000000u && (sticky || (r & 1u) != 0u)))
        ++r;                                       // may carry into the exponent (the smallest normal, infinity)
    if (FMT_FN != 0 && r > FMT_QNAN - 1u) return sign_bits | FMT_QNAN;
    return sign_bits | r;
}
#endif

#if ELEM_KIND >= 3
// a float32 (bits: zero, normal or infinite) rounded to the format
uint f32_to_fmt(uint f) {
    uint e = (f >> 23) & 0xFFu;
    if (e == 0u) return (f >> 31) << (FMT_EB + FMT_MB);
    return fmt_round(f >> 31, int(e) - 127 + FMT_BIAS, (f & 0x7FFFFFu) << 9, false);
}
#endif
#if ELEM_KIND >= 4
// float8 -> float32, exact (no NaN; float8 values are never float32 subnormals)
uint fmt_to_f32(uint v) {
    uint sign = (v & FMT_SIGN) << (31u - FMT_EB - FMT_MB);
    uint e = (v >> FMT_MB) & FMT_EMASK, m = v & FMT_MMASK;
    if (FMT_FN == 0 && e == FMT_EMASK) return sign | 0x7F800000u;
    if (e == 0u) {
        if (m == 0u) return sign;
        uint msb = uint(findMSB(m));
        return sign | (uint(1 - FMT_BIAS - int(FMT_MB) + int(msb) + 127) << 23) | ((m << (23u - msb)) & 0x7FFFFFu);
    }
    return sign | (uint(int(e) - FMT_BIAS + 127) << 23) | (m << (23u - FMT_MB));
}
#endif
#if ELEM_KIND == 3
// bfloat16 in software: exact conversions to float64, softfloat64's operation (53 >= 2 * 8 + 2: its rounding
// is innocuous), one rounding to bfloat16
uvec2 bf16_to_f64(uint v) {
    uint sign = (v >> 15) << 31, e = (v >> 7) & 0xFFu, m = v & 0x7Fu;
    if (e == 0xFFu) return uvec2(0u, sign | 0x7FF00000u);        // infinity (NaNs are handled before)
    if (e == 0u) {
        if (m == 0u) return uvec2(0u, sign);
        uint msb = uint(findMSB(m));
        return uvec2(0u, sign | (uint(int(msb) - 133 + 1023) << 20) | (((m << (7u - msb)) & 0x7Fu) << 13));
    }
    return uvec2(0u, sign | ((e - 127u + 1023u) << 20) | (m << 13));
}

uint bf16_soft(uint acc, uint x) {
    uvec2 r = OP == OP_ADD ? f64_add(bf16_to_f64(acc), bf16_to_f64(x)) : f64_mul(bf16_to_f64(acc), bf16_to_f64(x));
    if (f64_is_nan(r)) return FMT_QNAN | FMT_SIGN;              // invalid operation
    int e = f64_exp(r);
    if (e == 0) return (r.y >> 31) << 15;                       // zero (bfloat16 results are float64 normals)
    return fmt_round(r.y >> 31, e - 1023 + FMT_BIAS, ((r.y & 0xFFFFFu) << 12) | (r.x >> 20), (r.x & 0xFFFFFu) != 0u);
}

bool bf16_subnormal(uint v) { return (v & 0x7F80u) == 0u && (v & 0x7Fu) != 0u; }
#endif

// ---- float16 <-> float32, exact and round-to-nearest-even, in integer arithmetic ----
uint f16_to_f32(uint h) {
    uint sign = (h & 0x8000u) << 16;
    uint exp = (h >> 10) & 0x1Fu;
    uint man = h & 0x3FFu;
    if (exp == 0x1Fu) return sign | 0x7F800000u | (man << 13);     // inf, NaN (payload kept)
    if (exp == 0u) {
        if (man == 0u) return sign;
        uint msb = uint(findMSB(man));                              // subnormal: normalise
        return sign | ((msb + 103u) << 23) | (((man << (10u - msb)) & 0x3FFu) << 13);
    }
    return sign | ((exp + 112u) << 23) | (man << 13);
}

uint f32_to_f16(uint f) {
    uint sign = (f >> 16) & 0x8000u;
    uint exp = (f >> 23) & 0xFFu;
    uint man = f & 0x7FFFFFu;
    if (exp == 0xFFu) return man == 0u ? sign | 0x7C00u : sign | 0x7E00u | (man >> 13);
    int e = int(exp) - 112;                                         // float16 exponent field
    if (e >= 31) return sign | 0x7C00u;
    if (e <= 0) {
        if (e < -10) return sign;                                   // below half the smallest subnormal
        uint m = man | 0x800000u;
        uint shift = uint(14 - e);                                  // 14..24
        uint r = m >> shift, rem = m & ((1u << shift) - 1u), half_ = 1u << (shift - 1u);
        if (rem > half_ || (rem == half_ && (r & 1u) != 0u)) ++r;  // may carry into the smallest normal
        return sign | r;
    }
    uint r = (uint(e) << 10) | (man >> 13), rem = man & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u)) ++r;  // may carry into the exponent (inf)
    return sign | r;
}

bool f16_is_nan(uint h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0u; }
bool f32_is_nan(uint f) { return (f & 0x7F800000u) == 0x7F800000u && (f & 0x7FFFFFu) != 0u; }

// ---- ordering keys: unsigned comparison of the keys orders the values ----
#if ELEM_BYTES == 8
uvec2 order_key(uvec2 v) {
#if ELEM_KIND >= 2
    return (v.y & 0x80000000u) != 0u ? ~v : uvec2(v.x, v.y | 0x80000000u);
#elif ELEM_KIND == 1
    return uvec2(v.x, v.y ^ 0x80000000u);
#else
    return v;
#endif
}
bool key_less(uvec2 a, uvec2 b) { return u64_lt(order_key(a), order_key(b)); }
#else
const uint SIGN_BIT = 1u << (8u * ELEM_BYTES - 1u);
#if ELEM_BYTES == 4
const uint ALL_BITS = 0xFFFFFFFFu;
#else
const uint ALL_BITS = (1u << (8u * ELEM_BYTES)) - 1u;
#endif
uint order_key(uint v) {
#if ELEM_KIND >= 2
    return (v & SIGN_BIT) != 0u ? ~v & ALL_BITS : v | SIGN_BIT;
#elif ELEM_KIND == 1
    return v ^ SIGN_BIT;
#else
    return v;
#endif
}
bool key_less(uint a, uint b) { return order_key(a) < order_key(b); }
uint order_unkey(uint k) {          // order_key's inverse
#if ELEM_KIND >= 2
    return (k & SIGN_BIT) != 0u ? k & ~SIGN_BIT : ~k & ALL_BITS;
#elif ELEM_KIND == 1
    return k ^ SIGN_BIT;
#else
    return k;
#endif
}
#endif

bool is_nan(ELEM_T v) {
#if ELEM_KIND < 2
    return false;
#elif ELEM_KIND >= 3
    return fmt_is_nan(v);
#elif ELEM_BYTES == 2
    return f16_is_nan(v);
#elif ELEM_BYTES == 4
    return f32_is_nan(v);
#else
    return f64_is_nan(v);
#endif
}

// One float32 add or mul (OP) as the device computes it ("precise": neither contracted nor reassociated), as bits.
uint f32_op(float a, float b) {
    if (OP == OP_ADD) {
        precise float r = a + b;
        return floatBitsToUint(r);
    }
    precise float r = a * b;
    return floatBitsToUint(r);
}

// FAST_STEP (bfloat16 and float16 add and mul): a step as the device's float32 operation (f32_op, combine()'s) on
// operands converted by shifts (fast_f32), and the rounding to nearest even of its result in integers (fast_round;
// fast_keep: the same rounding, the result kept in float32 form).
// That is combine()'s step whenever both operands are finite and normal (bfloat16: or zero; fast_operand) and the
// result a normal of the type in float32 (fast_result): what combine() would otherwise take in software, by its
// NaN rules or with a subnormal rounding. Callers take it only where every step of theirs passed both checks.
// (The checks are range compares without && or ||, which glslang compiles to branches.)
#if ELEM_KIND == 3
#define FAST_STEP 1
uint fast_f32(uint v) { return v << 16; }
bool fast_operand(uint v) { return any(bvec2(((v >> 7) & 0xFFu) - 1u < 0xFEu, (v & 0x7FFFu) == 0u)); }
bool fast_result(uint f) { return ((f >> 23) & 0xFFu) - 1u < 0xFEu; }
uint fast_round(uint f) { return (f + 0x7FFFu + ((f >> 16) & 1u)) >> 16; }
uint fast_keep(uint f) { return (f + 0x7FFFu + ((f >> 16) & 1u)) & 0xFFFF0000u; }
#elif ELEM_KIND == 2 && ELEM_BYTES == 2
#define FAST_STEP 1
uint fast_f32(uint h) { return ((h & 0x8000u) << 16) | (((h & 0x7FFFu) << 13) + 0x38000000u); }
bool fast_operand(uint h) { return ((h >> 10) & 0x1Fu) - 1u < 0x1Eu; }
bool fast_result(uint f) { return ((f >> 23) & 0xFFu) - 113u < 30u; }
uint fast_round(uint f) {
    uint r = (f & 0x7FFFFFFFu) - 0x38000000u;
    return ((f >> 16) & 0x8000u) | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13);
}
uint fast_keep(uint f) { return (f + 0xFFFu + ((f >> 13) & 1u)) & 0xFFFFE000u; }
#endif

ELEM_T combine(ELEM_T acc, ELEM_T x) {
    if (OP == OP_MIN || OP == OP_MAX) {
        if (is_nan(acc)) return acc;
        if (is_nan(x)) return x;
        if (OP == OP_MIN)
            return key_less(x, acc) ? x : acc;
        return key_less(acc, x) ? x : acc;
    }
#if ELEM_KIND < 2                         // integers: the low bits of a product or sum do not depend on sign
#if ELEM_BYTES == 8
    return OP == OP_ADD ? u64_add(acc, x) : u64_mul(acc, x);
#else
    return (OP == OP_ADD ? acc + x : acc * x) & ALL_BITS;
#endif

#elif ELEM_BYTES == 8
    return OP == OP_ADD ? f64_add(acc, x) : f64_mul(acc, x);

#elif ELEM_KIND >= 3                      // bfloat16, float8: ml_dtypes' NaN rules, then float32 or software
#if ELEM_KIND >= 4
    if (OP == OP_ADD) {
        if (is_nan(acc)) return FMT_QNAN | (acc & FMT_SIGN);
        if (is_nan(x)) return FMT_QNAN;
    }
#endif
    if (is_nan(x)) return FMT_QNAN | (x & FMT_SIGN);
    if (is_nan(acc)) return FMT_QNAN | (acc & FMT_SIGN);
#if ELEM_KIND == 3
    if (bf16_subnormal(acc) || bf16_subnormal(x)) return bf16_soft(acc, x);
    float a = uintBitsToFloat(acc << 16), b = uintBitsToFloat(x << 16);
#else
    float a = uintBitsToFloat(fmt_to_f32(acc)), b = uintBitsToFloat(fmt_to_f32(x));
#endif
    uint bits = f32_op(a, b);
    if (f32_is_nan(bits)) return FMT_QNAN | FMT_SIGN;           // invalid operation
#if ELEM_KIND == 3
    if ((bits & 0x7F800000u) == 0u) return bf16_soft(acc, x);   // zero or subnormal: the device may have flushed it
#endif
    return f32_to_fmt(bits);

#else                                     // float16, float32: NaN operands handled here, not by the device
#if ELEM_BYTES == 2                       // (x's NaN first, as NumPy's float16 loops give it)
    if (f16_is_nan(x)) return x | 0x200u;
    if (f16_is_nan(acc)) return acc | 0x200u;
    float a = uintBitsToFloat(f16_to_f32(acc)), b = uintBitsToFloat(f16_to_f32(x));
#else
    if (f32_is_nan(acc)) return acc | 0x400000u;
    if (f32_is_nan(x)) return x | 0x400000u;
    float a = uintBitsToFloat(acc), b = uintBitsToFloat(x);
#endif
    uint bits = f32_op(a, b);
#if ELEM_BYTES == 2
    return f32_is_nan(bits) ? 0xFE00u : f32_to_f16(bits);
#else
    return f32_is_nan(bits) ? 0xFFC00000u : bits;
#endif
#endif
}

#if ELEM_KIND >= 2
// Reduction "mean": s / n (n >= 1 updates, counted as dmlgpu/plans/reduction.py says) rounded once to nearest even,
// by long division in integers (the same bits on every device, subnormals included; below 2^16 updates, types of
// at most 4 bytes: three exact 32-bit integer divisions). A NaN, an infinity,
// a zero, and n == 1 give s itself.
ELEM_T mean_of(ELEM_T s, uint n) {
    if (n <= 1u || is_nan(s)) return s;
#if ELEM_BYTES == 8
    uint sign = s.y >> 31;
    int ef = f64_exp(s);
    uvec2 sig = f64_frac(s);
    if (ef == 0x7FF || (ef == 0 && !u64_nz(sig))) return s;
    if (ef != 0) sig.y |= 0x00100000u;
    int e = max(ef, 1) - 1023 - 52;                  // |s| = sig * 2^e
#else
    uint sign = s >> (FMT_EB + FMT_MB);
    uint ef = (s >> FMT_MB) & FMT_EMASK, m = s & FMT_MMASK;
    if ((FMT_FN == 0 && ef == FMT_EMASK) || (ef == 0u && m == 0u)) return s;
    uvec2 sig = uvec2(ef == 0u ? m : m | (1u << FMT_MB), 0u);
    int e = int(max(ef, 1u)) - FMT_BIAS - int(FMT_MB);
#endif
#if ELEM_BYTES != 8
    if (n < 0x10000u) {     // three 32-bit divisions: d * 2^32 / n = q1 * 2^32 + q2 * 2^16 + q3 + r3 / n
        uint lz32 = 31u - uint(findMSB(sig.x));
        uint d32 = sig.x << lz32;                    // |s| = d32 * 2^(e - lz32), d32's leading bit 31
        uint q1 = d32 / n, r1 = d32 - q1 * n;
        uint t2 = r1 << 16, q2 = t2 / n, r2 = t2 - q2 * n;      // (r1, r2 < n < 2^16: no overflow)
        uint t3 = r2 << 16, q3 = t3 / n, r3 = t3 - q3 * n;
        uvec2 qq = uvec2((q2 << 16) + q3, q1);      // at least 48 significant bits (q1 >= 2^15)
        uint l = u64_clz(qq);
        uvec2 qn = u64_shl(qq, l);                   // leading bit 63: |s| / n = 1.f * 2^(31 + e - lz32 - l)
        return fmt_round(sign, 31 + e - int(lz32) - int(l) + FMT_BIAS, (qn.y << 1) | (qn.x >> 31),
                         (qn.x << 1) != 0u || r3 != 0u);
    }
#endif
    uint lz = u64_clz(sig);
    uvec2 d = u64_shl(sig, lz);                      // |s| = d * 2^(e - lz), d's leading bit 63
    e -= int(lz);
    // quotient bits, most significant first, of d followed by zeros, until the quotient has 64 bits
    uvec2 q = uvec2(0u);
    uint r = 0u;
    int t = 0;
    for (; t < 128 && q.y < 0x80000000u; ++t) {
        uint bit = t < 64 ? u64_shr(d, uint(63 - t)).x & 1u : 0u;
        bool carry = r >= 0x80000000u;               // 2r + bit >= 2^32 > n
        r = (r << 1) | bit;
        bool one = carry || r >= n;
        if (one) r -= n;
        q = uvec2((q.x << 1) | (one ? 1u : 0u), (q.y << 1) | (q.x >> 31));
    }
    // |s| / n = (q + r / n) * 2^(e + 64 - t) = 1.(q's other bits) * 2^x
    int x = e + 127 - t;
#if ELEM_BYTES == 8
    uvec2 z = u64_shr_jam(q, 1u);
    if (r != 0u) z.x |= 1u;
    return f64_round_pack(sign, x + 1023 - 1, z);
#else
    return fmt_round(sign, x + FMT_BIAS, (q.y << 1) | (q.x >> 31), (q.x << 1) != 0u || r != 0u);
#endif
}
#endif
