// 64-bit integers and IEEE 754 binary64 add and multiply in 32-bit words, for devices without int64 or
// float64 support. A 64-bit value is a uvec2 (x: low word, y: high word), its little-endian byte layout.
//
// The float64 algorithms are those of Berkeley SoftFloat 3e (f64_add, f64_mul, softfloat_addMagsF64,
// softfloat_subMagsF64, softfloat_roundPackToF64, softfloat_normRoundPackToF64), specialised to
// round-to-nearest-even without exception flags: subnormals are computed exactly (never flushed),
// overflow gives infinity, x + (-x) gives +0. NaNs as x86 SSE makes them: a NaN operand is returned
// quieted (the first operand's when both are NaN); an invalid operation (inf - inf, 0 * inf) returns the
// default NaN 0xFFF8000000000000.

// ---- 64-bit unsigned integer helpers ----
uvec2 u64_add(uvec2 a, uvec2 b) {
    uint c;
    uint lo = uaddCarry(a.x, b.x, c);
    return uvec2(lo, a.y + b.y + c);
}

uvec2 u64_sub(uvec2 a, uvec2 b) {
    uint borrow;
    uint lo = usubBorrow(a.x, b.x, borrow);
    return uvec2(lo, a.y - b.y - borrow);
}

// Low 64 bits of the product (the same for signed and unsigned operands).
uvec2 u64_mul(uvec2 a, uvec2 b) {
    uint hi, lo;
    umulExtended(a.x, b.x, hi, lo);
    return uvec2(lo, hi + a.x * b.y + a.y * b.x);
}

bool u64_lt(uvec2 a, uvec2 b) { return a.y < b.y || (a.y == b.y && a.x < b.x); }
bool u64_nz(uvec2 a) { return (a.x | a.y) != 0u; }

uvec2 u64_shl(uvec2 a, uint n) {   // n in [0, 63]
    if (n == 0u) return a;
    if (n >= 32u) return uvec2(0u, a.x << (n - 32u));
    return uvec2(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}

uvec2 u64_shr(uvec2 a, uint n) {   // n in [0, 63]
    if (n == 0u) return a;
    if (n >= 32u) return uvec2(a.y >> (n - 32u), 0u);
    return uvec2((a.x >> n) | (a.y << (32u - n)), a.y >> n);
}

// Shift right by any n >= 0, OR-ing every bit shifted out into bit 0 (a "sticky" bit).
uvec2 u64_shr_jam(uvec2 a, uint n) {
    if (n == 0u) return a;
    if (n >= 64u) return uvec2(u64_nz(a) ? 1u : 0u, 0u);
    uvec2 r = u64_shr(a, n);
    if (u64_shl(r, n) != a) r.x |= 1u;
    return r;
}

uint u64_clz(uvec2 a) {
    if (a.y != 0u) return 31u - uint(findMSB(a.y));
    if (a.x != 0u) return 63u - uint(findMSB(a.x));
    return 64u;
}

// ---- binary64 ----
const uvec2 F64_DEFAULT_NAN = uvec2(0u, 0xFFF80000u);

bool f64_is_nan(uvec2 u) { return (u.y & 0x7FF00000u) == 0x7FF00000u && ((u.y & 0xFFFFFu) | u.x) != 0u; }
int f64_exp(uvec2 u) { return int((u.y >> 20) & 0x7FFu); }
uvec2 f64_frac(uvec2 u) { return uvec2(u.x, u.y & 0xFFFFFu); }
uvec2 f64_inf(uint sign) { return uvec2(0u, (sign << 31) | 0x7FF00000u); }

// sign, exponent field and significand, added (not OR-ed): a significand bit 52 carries into the exponent.
uvec2 f64_pack(uint sign, int exp, uvec2 sig) {
    return u64_add(uvec2(0u, (sign << 31) + (uint(exp) << 20)), sig);
}

uvec2 f64_propagate_nan(uvec2 a, uvec2 b) {
    return (f64_is_nan(a) ? a : b) | uvec2(0u, 0x00080000u);
}

// sig: the significand with its leading bit at bit 62 (or lower when exp <= 0), 10 bits below the result.
uvec2 f64_round_pack(uint sign, int exp, uvec2 sig) {
    uint round_bits = sig.x & 0x3FFu;
    if (uint(exp) >= 0x7FDu) {
        if (exp < 0) {
            sig = u64_shr_jam(sig, uint(-exp));
            exp = 0;
            round_bits = sig.x & 0x3FFu;
        } else if (exp > 0x7FD || !u64_lt(u64_add(sig, uvec2(0x200u, 0u)), uvec2(0u, 0x80000000u))) {
            return f64_inf(sign);
        }
    }
    sig = u64_shr(u64_add(sig, uvec2(0x200u, 0u)), 10u);
    if (round_bits == 0x200u) sig.x &= ~1u;   // a tie: to even
    if (!u64_nz(sig)) exp = 0;
    return f64_pack(sign, exp, sig);
}

uvec2 f64_norm_round_pack(uint sign, int exp, uvec2 sig) {
    uint shift = u64_clz(sig) - 1u;
    exp -= int(shift);
    if (shift >= 10u && uint(exp) < 0x7FDu)
        return f64_pack(sign, u64_nz(sig) ? exp : 0, u64_shl(sig, shift - 10u));
    return f64_round_pack(sign, exp, u64_shl(sig, shift));
}

uvec2 f64_add_mags(uvec2 a, uvec2 b, uint sign) {
    int exp_a = f64_exp(a), exp_b = f64_exp(b);
    uvec2 sig_a = f64_frac(a), sig_b = f64_frac(b);
    int diff = exp_a - exp_b;
    int exp_z;
    uvec2 sig_z;
    if (diff == 0) {
        if (exp_a == 0) return u64_add(a, sig_b);           // both subnormal (or zero): exact
        if (exp_a == 0x7FF) {
            if (u64_nz(sig_a) || u64_nz(sig_b)) return f64_propagate_nan(a, b);
            return a;
        }
        exp_z = exp_a;
        sig_z = u64_shl(u64_add(uvec2(0u, 0x00200000u), u64_add(sig_a, sig_b)), 9u);
    } else {
        sig_a = u64_shl(sig_a, 9u);
        sig_b = u64_shl(sig_b, 9u);
        if (diff < 0) {
            if (exp_b == 0x7FF) {
                if (u64_nz(sig_b)) return f64_propagate_nan(a, b);
                return f64_inf(sign);
            }
            exp_z = exp_b;
            sig_a = exp_a != 0 ? u64_add(sig_a, uvec2(0u, 0x20000000u)) : u64_shl(sig_a, 1u);
            sig_a = u64_shr_jam(sig_a, uint(-diff));
        } else {
            if (exp_a == 0x7FF) {
                if (u64_nz(sig_a)) return f64_propagate_nan(a, b);
                return a;
            }
            exp_z = exp_a;
            sig_b = exp_b != 0 ? u64_add(sig_b, uvec2(0u, 0x20000000u)) : u64_shl(sig_b, 1u);
            sig_b = u64_shr_jam(sig_b, uint(diff));
        }
        sig_z = u64_add(uvec2(0u, 0x20000000u), u64_add(sig_a, sig_b));
        if (u64_lt(sig_z, uvec2(0u, 0x40000000u))) {
            --exp_z;
            sig_z = u64_shl(sig_z, 1u);
        }
    }
    return f64_round_pack(sign, exp_z, sig_z);
}

uvec2 f64_sub_mags(uvec2 a, uvec2 b, uint sign) {
    int exp_a = f64_exp(a), exp_b = f64_exp(b);
    uvec2 sig_a = f64_frac(a), sig_b = f64_frac(b);
    int diff = exp_a - exp_b;
    if (diff == 0) {
        if (exp_a == 0x7FF) {
            if (u64_nz(sig_a) || u64_nz(sig_b)) return f64_propagate_nan(a, b);
            return F64_DEFAULT_NAN;                          // inf - inf
        }
        if (sig_a == sig_b) return uvec2(0u);                // exact cancellation: +0
        if (exp_a != 0) --exp_a;
        uvec2 d;
        if (u64_lt(sig_a, sig_b)) {
            sign ^= 1u;
            d = u64_sub(sig_b, sig_a);
        } else {
            d = u64_sub(sig_a, sig_b);
        }
        int shift = int(u64_clz(d)) - 11;
        int exp_z = exp_a - shift;
        if (exp_z < 0) {
            shift = exp_a;
            exp_z = 0;
        }
        return f64_pack(sign, exp_z, u64_shl(d, uint(shift)));   // exact
    }
    sig_a = u64_shl(sig_a, 10u);
    sig_b = u64_shl(sig_b, 10u);
    int exp_z;
    uvec2 sig_z;
    if (diff < 0) {
        sign ^= 1u;
        if (exp_b == 0x7FF) {
            if (u64_nz(sig_b)) return f64_propagate_nan(a, b);
            return f64_inf(sign);
        }
        sig_a = exp_a != 0 ? u64_add(sig_a, uvec2(0u, 0x40000000u)) : u64_add(sig_a, sig_a);
        sig_a = u64_shr_jam(sig_a, uint(-diff));
        sig_b.y |= 0x40000000u;
        exp_z = exp_b;
        sig_z = u64_sub(sig_b, sig_a);
    } else {
        if (exp_a == 0x7FF) {
            if (u64_nz(sig_a)) return f64_propagate_nan(a, b);
            return a;
        }
        sig_b = exp_b != 0 ? u64_add(sig_b, uvec2(0u, 0x40000000u)) : u64_add(sig_b, sig_b);
        sig_b = u64_shr_jam(sig_b, uint(diff));
        sig_a.y |= 0x40000000u;
        exp_z = exp_a;
        sig_z = u64_sub(sig_a, sig_b);
    }
    return f64_norm_round_pack(sign, exp_z - 1, sig_z);
}

uvec2 f64_add(uvec2 a, uvec2 b) {
    uint sign_a = a.y >> 31, sign_b = b.y >> 31;
    return sign_a == sign_b ? f64_add_mags(a, b, sign_a) : f64_sub_mags(a, b, sign_a);
}

uvec2 f64_mul(uvec2 a, uvec2 b) {
    uint sign = (a.y ^ b.y) >> 31;
    int exp_a = f64_exp(a), exp_b = f64_exp(b);
    uvec2 sig_a = f64_frac(a), sig_b = f64_frac(b);
    if (exp_a == 0x7FF) {
        if (u64_nz(sig_a) || (exp_b == 0x7FF && u64_nz(sig_b))) return f64_propagate_nan(a, b);
        return (exp_b != 0 || u64_nz(sig_b)) ? f64_inf(sign) : F64_DEFAULT_NAN;
    }
    if (exp_b == 0x7FF) {
        if (u64_nz(sig_b)) return f64_propagate_nan(a, b);
        return (exp_a != 0 || u64_nz(sig_a)) ? f64_inf(sign) : F64_DEFAULT_NAN;
    }
    if (exp_a == 0) {
        if (!u64_nz(sig_a)) return uvec2(0u, sign << 31);
        uint shift = u64_clz(sig_a) - 11u;
        exp_a = 1 - int(shift);
        sig_a = u64_shl(sig_a, shift);
    }
    if (exp_b == 0) {
        if (!u64_nz(sig_b)) return uvec2(0u, sign << 31);
        uint shift = u64_clz(sig_b) - 11u;
        exp_b = 1 - int(shift);
        sig_b = u64_shl(sig_b, shift);
    }
    int exp_z = exp_a + exp_b - 0x3FF;
    sig_a = u64_shl(sig_a | uvec2(0u, 0x00100000u), 10u);
    sig_b = u64_shl(sig_b | uvec2(0u, 0x00100000u), 11u);
    // 128-bit product r3:r2:r1:r0; keep the high 64 bits with the low ones folded into a sticky bit.
    uint h00, l00, h01, l01, h10, l10, h11, l11, c;
    umulExtended(sig_a.x, sig_b.x, h00, l00);
    umulExtended(sig_a.x, sig_b.y, h01, l01);
    umulExtended(sig_a.y, sig_b.x, h10, l10);
    umulExtended(sig_a.y, sig_b.y, h11, l11);
    uint c1 = 0u, c2 = 0u;
    uint r1 = uaddCarry(h00, l01, c); c1 += c;
    r1 = uaddCarry(r1, l10, c); c1 += c;
    uint r2 = uaddCarry(h01, h10, c); c2 += c;
    r2 = uaddCarry(r2, l11, c); c2 += c;
    r2 = uaddCarry(r2, c1, c); c2 += c;
    uint r3 = h11 + c2;
    uvec2 sig_z = uvec2(r2 | ((l00 | r1) != 0u ? 1u : 0u), r3);
    if (u64_lt(sig_z, uvec2(0u, 0x40000000u))) {
        --exp_z;
        sig_z = u64_shl(sig_z, 1u);
    }
    return f64_round_pack(sign, exp_z, sig_z);
}
