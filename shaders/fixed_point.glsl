// order="fixed-point"'s arithmetic (dmlgpu/plans/reduction_fixed.py's contract; reference.fixed_sum), shared by
// scatter_fixed.comp (a scatter's targets, with atomics) and segment.comp's ORDERS variants (a segment's terms, one
// invocation each). A finite term v of scale exponent e = max(exponent field, 1) and significand sig (hidden bit
// included) is the 64-bit integer round(sig * 2^(e - E + frac)), to nearest even, negated for a negative v, where
// E is the target's largest scale exponent; the terms' integers are summed exactly (two's complement, as uvec2
// words: no 64-bit types needed), and the sum is rounded once to the element type. A target's code is the max
// over its terms of (scale exponent << 1 | the term is not -0); an infinity or NaN counts as 3.
// Needs arith.glsl's float format (FMT_*, fmt_round, fmt_is_nan) and softfloat64.glsl's u64_* (units.glsl).
const uint F_NAN = 1u, F_POS_INF = 2u, F_NEG_INF = 4u;     // the specials a target saw

uint special(uint v) {              // the flag of an infinity or NaN, else 0
    if (fmt_is_nan(v)) return F_NAN;
    bool inf = FMT_FN == 0 && ((v >> FMT_MB) & FMT_EMASK) == FMT_EMASK && (v & FMT_MMASK) == 0u;
    return inf ? ((v & FMT_SIGN) != 0u ? F_NEG_INF : F_POS_INF) : 0u;
}

uint code_of(uint v) {
    if (special(v) != 0u) return 3u;
    return (max((v >> FMT_MB) & FMT_EMASK, 1u) << 1) | (v == FMT_SIGN ? 0u : 1u);
}

// a finite value as a fixed-point integer at scale exponent ``scale`` with ``frac`` fraction bits below it
uvec2 fixed_of(uint v, uint scale, uint frac) {
    uint ef = (v >> FMT_MB) & FMT_EMASK;
    uint sig = ef != 0u ? (v & FMT_MMASK) | (1u << FMT_MB) : v & FMT_MMASK;
    int k = int(max(ef, 1u)) - int(scale) + int(frac);
    uvec2 mag;
    if (k >= 0) {
        mag = u64_shl(uvec2(sig, 0u), uint(k));             // k <= frac: below 2^63
    } else if (k < -32) {
        mag = uvec2(0u);                                    // sig < 2^31 < half of 2^-k
    } else {
        uint r = uint(-k);                                  // 1 .. 32
        uint q = r == 32u ? 0u : sig >> r;
        uint rem = r == 32u ? sig : sig & ((1u << r) - 1u);
        uint half_ = 1u << (r - 1u);
        if (rem > half_ || (rem == half_ && (q & 1u) != 0u)) ++q;
        mag = uvec2(q, 0u);
    }
    return (v & FMT_SIGN) != 0u ? u64_sub(uvec2(0u), mag) : mag;
}

// the sum ``s`` at scale exponent code >> 1, rounded once to the element type
uint float_of(uvec2 s, uint code, uint frac) {
    if (!u64_nz(s)) return code == 2u ? FMT_SIGN : 0u;
    uint sign = s.y >> 31;
    uvec2 mag = sign != 0u ? u64_sub(uvec2(0u), s) : s;      // below 2^63
    uint lz = u64_clz(mag);
    uvec2 norm = u64_shl(mag, lz);                          // leading bit 63
    int e = 63 - int(lz) + int(code >> 1) - int(FMT_MB) - int(frac);
    return fmt_round(sign, e, (norm.y << 1) | (norm.x >> 31), (norm.x << 1) != 0u);
}

// a target's result: its specials' (a NaN, or both infinities: the negative quiet NaN; else the infinity), else
// its sum's
uint fixed_result(uvec2 s, uint code, uint flags, uint frac) {
    if ((flags & F_NAN) != 0u || flags == (F_POS_INF | F_NEG_INF))
        return FMT_QNAN | FMT_SIGN;
    if (flags != 0u)
        return (FMT_EMASK << FMT_MB) | (flags == F_NEG_INF ? FMT_SIGN : 0u);
    return float_of(s, code, frac);
}
