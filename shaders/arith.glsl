// combine(acc, x): one step of a scatter reduction on raw element bits, for one element type and one
// operation chosen at compile time:
//   ELEM_KIND  0 unsigned integer, 1 signed integer, 2 IEEE float
//   ELEM_BYTES 1, 2, 4 or 8 (values of 1 and 2 bytes are held in the low bits of a uint, zero-extended;
//              8-byte values are uvec2 (low word, high word))
//   OP         0 add, 1 mul, 2 min, 3 max
// Integers wrap (two's complement, like NumPy's fixed-width arithmetic). Floats round to nearest even:
// float16 through an exact conversion to float32 (one float32 operation, then one rounding to float16: the
// double rounding is innocuous since 24 >= 2 * 11 + 2, and float16 operands never give float32
// subnormals), float32 by the device's own add and mul (a device may flush float32 subnormals), float64
// in software (softfloat64.glsl). min/max compare the bits (no flushing): a NaN operand wins (acc's when
// both are), and -0 < +0 (IEEE 754-2019 minimum/maximum). NaN results never depend on the device:
// a NaN operand comes back quieted (acc's first), an invalid operation gives x86's default NaN.
#include "softfloat64.glsl"

#if ELEM_BYTES == 8
#define ELEM_T uvec2
#else
#define ELEM_T uint
#endif

#define OP_ADD 0
#define OP_MUL 1
#define OP_MIN 2
#define OP_MAX 3

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
#if ELEM_KIND == 2
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
#if ELEM_KIND == 2
    return (v & SIGN_BIT) != 0u ? ~v & ALL_BITS : v | SIGN_BIT;
#elif ELEM_KIND == 1
    return v ^ SIGN_BIT;
#else
    return v;
#endif
}
bool key_less(uint a, uint b) { return order_key(a) < order_key(b); }
#endif

bool is_nan(ELEM_T v) {
#if ELEM_KIND != 2
    return false;
#elif ELEM_BYTES == 2
    return f16_is_nan(v);
#elif ELEM_BYTES == 4
    return f32_is_nan(v);
#else
    return f64_is_nan(v);
#endif
}

ELEM_T combine(ELEM_T acc, ELEM_T x) {
#if OP == OP_MIN || OP == OP_MAX
    if (is_nan(acc)) return acc;
    if (is_nan(x)) return x;
#if OP == OP_MIN
    return key_less(x, acc) ? x : acc;
#else
    return key_less(acc, x) ? x : acc;
#endif

#elif ELEM_KIND != 2                      // integers: the low bits of a product or sum do not depend on sign
#if ELEM_BYTES == 8 && OP == OP_ADD
    return u64_add(acc, x);
#elif ELEM_BYTES == 8
    return u64_mul(acc, x);
#elif OP == OP_ADD
    return (acc + x) & ALL_BITS;
#else
    return (acc * x) & ALL_BITS;
#endif

#elif ELEM_BYTES == 8 && OP == OP_ADD
    return f64_add(acc, x);
#elif ELEM_BYTES == 8
    return f64_mul(acc, x);

#else                                     // float16, float32: NaN operands handled here, not by the device
#if ELEM_BYTES == 2
    if (f16_is_nan(acc)) return acc | 0x200u;
    if (f16_is_nan(x)) return x | 0x200u;
    float a = uintBitsToFloat(f16_to_f32(acc)), b = uintBitsToFloat(f16_to_f32(x));
#else
    if (f32_is_nan(acc)) return acc | 0x400000u;
    if (f32_is_nan(x)) return x | 0x400000u;
    float a = uintBitsToFloat(acc), b = uintBitsToFloat(x);
#endif
#if OP == OP_ADD
    precise float r = a + b;
#else
    precise float r = a * b;
#endif
    uint bits = floatBitsToUint(r);
#if ELEM_BYTES == 2
    return f32_is_nan(bits) ? 0xFE00u : f32_to_f16(bits);
#else
    return f32_is_nan(bits) ? 0xFFC00000u : bits;
#endif
#endif
}
