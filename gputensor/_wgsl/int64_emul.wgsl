// int64 / uint64 as two 32-bit words, for adapters without `shader-int64`.
// The compute and storage types are the structs `i64e` / `u64e` { lo: u32, hi: u32 }: NumPy's
// little-endian byte layout, so host copies stay plain byte copies. They are structs, not
// vec2<u32>, so a kernel that does not know them (`+`, `<`, `select`, `T(0)`) fails to compile
// instead of computing per word; moving values (loads, stores, gathers) needs nothing.
// `kernels.with_helpers` declares the structs in every kernel that names them.
// Functions follow `// @fn NAME TYPES` markers as in ewise_helpers.wgsl; `x64_<op>_<type>` is
// the form of elementwise op <op> (elementwise_ops.expression renders the op table's int64
// rows against them). `x64w_*` work on the raw words as vec2<u32> (x: low, y: high).

// ---- raw words
// @fn x64w_add
fn x64w_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// @fn x64w_sub
fn x64w_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

// @fn x64w_neg
fn x64w_neg(a: vec2<u32>) -> vec2<u32> { return x64w_sub(vec2<u32>(0u, 0u), a); }

// @fn x64w_mul32
fn x64w_mul32(a: u32, b: u32) -> vec2<u32> {
    // the full 64-bit product of two u32, from 16-bit halves
    let a0 = a & 0xFFFFu;
    let a1 = a >> 16u;
    let b0 = b & 0xFFFFu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xFFFFu) + (p10 & 0xFFFFu);
    return vec2<u32>((p00 & 0xFFFFu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// @fn x64w_mul
fn x64w_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    // the low 64 bits of the product (wraps as NumPy)
    let p = x64w_mul32(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}

// @fn x64w_ult
fn x64w_ult(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }

// @fn x64w_shl
fn x64w_shl(a: vec2<u32>, s: u32) -> vec2<u32> {
    // s < 64
    if (s == 0u) { return a; }
    if (s >= 32u) { return vec2<u32>(0u, a.x << (s - 32u)); }
    return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s)));
}

// @fn x64w_shr
fn x64w_shr(a: vec2<u32>, s: u32, arith: bool) -> vec2<u32> {
    // s < 64; arith: the high bits are copies of the sign bit
    let fill = select(0u, 0xFFFFFFFFu, arith && (a.y >> 31u) != 0u);
    if (s == 0u) { return a; }
    if (s >= 32u) {
        let hi = select(a.y >> (s - 32u), bitcast<u32>(bitcast<i32>(a.y) >> (s - 32u)), arith);
        return vec2<u32>(hi, fill);
    }
    let hi = select(a.y >> s, bitcast<u32>(bitcast<i32>(a.y) >> s), arith);
    return vec2<u32>((a.x >> s) | (a.y << (32u - s)), hi);
}

// @fn x64w_udivmod
fn x64w_udivmod(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
    // (quotient, remainder) of unsigned n / d (d != 0), by shift and subtract
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    for (var i = 63i; i >= 0i; i--) {
        let word = select(n.x, n.y, i >= 32i);
        let bit = (word >> (u32(i) & 31u)) & 1u;
        let carry = r.y >> 31u;
        r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
        if (carry != 0u || !x64w_ult(r, d)) {
            r = x64w_sub(r, d);
            if (i >= 32i) { q.y = q.y | (1u << (u32(i) - 32u)); } else { q.x = q.x | (1u << u32(i)); }
        }
    }
    return vec4<u32>(q, r);
}

// @fn x64w_clz
fn x64w_clz(a: vec2<u32>) -> u32 {
    if (a.y != 0u) { return countLeadingZeros(a.y); }
    return 32u + countLeadingZeros(a.x);
}

// @fn x64w_to_f32
fn x64w_to_f32(a: vec2<u32>) -> f32 {
    // the unsigned value a, rounded to nearest even
    if (a.y == 0u && a.x < 0x1000000u) { return f32(a.x); }
    let lz = x64w_clz(a);
    let m = x64w_shl(a, lz);  // leading one at bit 63
    var mant = m.y >> 8u;
    let half = (m.y >> 7u) & 1u;
    let sticky = (m.y & 0x7Fu) != 0u || m.x != 0u;
    var e = 63u - lz;
    if (half != 0u && (sticky || (mant & 1u) != 0u)) {
        mant = mant + 1u;
        if (mant == 0x1000000u) { mant = 0x800000u; e = e + 1u; }
    }
    return bitcast<f32>(((e + 127u) << 23u) | (mant & 0x7FFFFFu));
}

// @fn x64w_from_f32
fn x64w_from_f32(x: f32) -> vec2<u32> {
    // trunc(|x|) as an unsigned value (|x| < 2^64; every step is exact)
    let t = trunc(abs(x));
    if (!(t < 18446744073709551616.0)) { return vec2<u32>(0u, 0x80000000u); }
    let hi = floor(t / 4294967296.0);
    return vec2<u32>(u32(t - hi * 4294967296.0), u32(hi));
}

// @fn x64w_to_f64
fn x64w_to_f64(a: vec2<u32>) -> f64 {
    // the unsigned value a, rounded to nearest even (shader-f64): hi * 2^32 is exact, so the
    // one addition rounds the exact value once
    return f64(a.y) * 4294967296.0lf + f64(a.x);
}

// @fn x64w_from_f64
fn x64w_from_f64(x: f64) -> vec2<u32> {
    // trunc(|x|) as an unsigned value (|x| < 2^64; every step is exact; shader-f64)
    let t = trunc(abs(x));
    if (!(t < 18446744073709551616.0lf)) { return vec2<u32>(0u, 0x80000000u); }
    let hi = floor(t / 4294967296.0lf);
    return vec2<u32>(u32(t - hi * 4294967296.0lf), u32(hi));
}

// ---- the types' words and signedness
// @fn x64_w i64e u64e
fn x64_w_TT(a: TT) -> vec2<u32> { return vec2<u32>(a.lo, a.hi); }
// @fn x64_v i64e u64e
fn x64_v_TT(w: vec2<u32>) -> TT { return TT(w.x, w.y); }
// @fn x64_signed_i64e
fn x64_signed_i64e() -> bool { return true; }
// @fn x64_signed_u64e
fn x64_signed_u64e() -> bool { return false; }
// @fn x64_isneg i64e u64e
fn x64_isneg_TT(a: TT) -> bool { return x64_signed_TT() && (a.hi >> 31u) != 0u; }
// @fn x64_iszero i64e u64e
fn x64_iszero_TT(a: TT) -> bool { return (a.lo | a.hi) == 0u; }
// @fn x64_mag i64e u64e
fn x64_mag_TT(a: TT) -> vec2<u32> {
    // |a| as unsigned words (the minimum of int64 is 2^63)
    let w = x64_w_TT(a);
    return select(w, x64w_neg(w), x64_isneg_TT(a));
}

// ---- conversions (wgsl_types.convert)
// @fn x64_from_i32 i64e u64e
fn x64_from_i32_TT(x: i32) -> TT { return TT(bitcast<u32>(x), select(0u, 0xFFFFFFFFu, x < 0i)); }
// @fn x64_from_u32 i64e u64e
fn x64_from_u32_TT(x: u32) -> TT { return TT(x, 0u); }
// @fn x64_from_bool i64e u64e
fn x64_from_bool_TT(x: bool) -> TT { return TT(select(0u, 1u, x), 0u); }
// @fn x64_from_f32 i64e u64e
fn x64_from_f32_TT(x: f32) -> TT {
    let m = x64w_from_f32(x);
    return x64_v_TT(select(m, x64w_neg(m), x < 0.0));
}
// @fn x64_from_f64 i64e u64e
fn x64_from_f64_TT(x: f64) -> TT {
    let m = x64w_from_f64(x);
    return x64_v_TT(select(m, x64w_neg(m), x < 0.0lf));
}
// @fn x64_to_f64 i64e u64e
fn x64_to_f64_TT(a: TT) -> f64 {
    let f = x64w_to_f64(x64_mag_TT(a));
    return select(f, -f, x64_isneg_TT(a));
}
// @fn x64_to_f32 i64e u64e
fn x64_to_f32_TT(a: TT) -> f32 {
    let f = x64w_to_f32(x64_mag_TT(a));
    return select(f, -f, x64_isneg_TT(a));
}
// @fn x64_to_i32 i64e u64e
fn x64_to_i32_TT(a: TT) -> i32 { return bitcast<i32>(a.lo); }
// @fn x64_to_u32 i64e u64e
fn x64_to_u32_TT(a: TT) -> u32 { return a.lo; }
// @fn x64_to_bool i64e u64e
fn x64_to_bool_TT(a: TT) -> bool { return !x64_iszero_TT(a); }
// @fn x64_to_i64e u64e
fn x64_to_i64e_TT(a: TT) -> i64e { return i64e(a.lo, a.hi); }
// @fn x64_to_u64e i64e
fn x64_to_u64e_TT(a: TT) -> u64e { return u64e(a.lo, a.hi); }

// ---- comparisons
// @fn x64_less i64e u64e
fn x64_less_TT(a: TT, b: TT) -> bool {
    let flip = select(0u, 0x80000000u, x64_signed_TT());
    return x64w_ult(vec2<u32>(a.lo, a.hi ^ flip), vec2<u32>(b.lo, b.hi ^ flip));
}
// @fn x64_equal i64e u64e
fn x64_equal_TT(a: TT, b: TT) -> bool { return a.lo == b.lo && a.hi == b.hi; }
// @fn x64_not_equal i64e u64e
fn x64_not_equal_TT(a: TT, b: TT) -> bool { return !x64_equal_TT(a, b); }
// @fn x64_greater i64e u64e
fn x64_greater_TT(a: TT, b: TT) -> bool { return x64_less_TT(b, a); }
// @fn x64_less_equal i64e u64e
fn x64_less_equal_TT(a: TT, b: TT) -> bool { return !x64_less_TT(b, a); }
// @fn x64_greater_equal i64e u64e
fn x64_greater_equal_TT(a: TT, b: TT) -> bool { return !x64_less_TT(a, b); }
// @fn x64_maximum i64e u64e
fn x64_maximum_TT(a: TT, b: TT) -> TT { if (x64_less_TT(a, b)) { return b; } return a; }
// @fn x64_minimum i64e u64e
fn x64_minimum_TT(a: TT, b: TT) -> TT { if (x64_less_TT(b, a)) { return b; } return a; }
// @fn x64_clip i64e u64e
fn x64_clip_TT(x: TT, lo: TT, hi: TT) -> TT { return x64_minimum_TT(x64_maximum_TT(x, lo), hi); }
// @fn x64_where i64e u64e
fn x64_where_TT(c: bool, a: TT, b: TT) -> TT { if (c) { return a; } return b; }

// ---- arithmetic
// @fn x64_add i64e u64e
fn x64_add_TT(a: TT, b: TT) -> TT { return x64_v_TT(x64w_add(x64_w_TT(a), x64_w_TT(b))); }
// @fn x64_subtract i64e u64e
fn x64_subtract_TT(a: TT, b: TT) -> TT { return x64_v_TT(x64w_sub(x64_w_TT(a), x64_w_TT(b))); }
// @fn x64_multiply i64e u64e
fn x64_multiply_TT(a: TT, b: TT) -> TT { return x64_v_TT(x64w_mul(x64_w_TT(a), x64_w_TT(b))); }
// @fn x64_square i64e u64e
fn x64_square_TT(a: TT) -> TT { return x64_multiply_TT(a, a); }
// @fn x64_negative i64e u64e
fn x64_negative_TT(a: TT) -> TT { return x64_v_TT(x64w_neg(x64_w_TT(a))); }
// @fn x64_abs i64e u64e
fn x64_abs_TT(a: TT) -> TT { return x64_v_TT(x64_mag_TT(a)); }
// @fn x64_sign i64e u64e
fn x64_sign_TT(a: TT) -> TT {
    if (x64_isneg_TT(a)) { return TT(0xFFFFFFFFu, 0xFFFFFFFFu); }
    return TT(select(1u, 0u, x64_iszero_TT(a)), 0u);
}
// @fn x64_floor_divide i64e u64e
fn x64_floor_divide_TT(a: TT, b: TT) -> TT {
    // rounds toward -inf (NumPy); division by zero gives 0; MIN // -1 wraps to MIN
    if (x64_iszero_TT(b)) { return TT(0u, 0u); }
    let qr = x64w_udivmod(x64_mag_TT(a), x64_mag_TT(b));
    var q = qr.xy;
    if (x64_isneg_TT(a) != x64_isneg_TT(b)) {
        q = x64w_neg(q);
        if ((qr.z | qr.w) != 0u) { q = x64w_sub(q, vec2<u32>(1u, 0u)); }
    }
    return x64_v_TT(q);
}
// @fn x64_remainder i64e u64e
fn x64_remainder_TT(a: TT, b: TT) -> TT {
    // the sign of the divisor (NumPy); remainder by zero gives 0
    if (x64_iszero_TT(b)) { return TT(0u, 0u); }
    let qr = x64w_udivmod(x64_mag_TT(a), x64_mag_TT(b));
    var r = select(qr.zw, x64w_neg(qr.zw), x64_isneg_TT(a));
    if ((r.x | r.y) != 0u && x64_isneg_TT(a) != x64_isneg_TT(b)) { r = x64w_add(r, x64_w_TT(b)); }
    return x64_v_TT(r);
}
// @fn x64_pow i64e u64e
fn x64_pow_TT(a: TT, b: TT) -> TT {
    // repeated squaring with wrap-around; negative exponents (int64): 1/a truncated
    let one = vec2<u32>(1u, 0u);
    let w = x64_w_TT(a);
    if (x64_isneg_TT(b)) {
        if (w.x == 1u && w.y == 0u) { return TT(1u, 0u); }
        if (w.x == 0xFFFFFFFFu && w.y == 0xFFFFFFFFu) {
            if ((b.lo & 1u) != 0u) { return a; }
            return TT(1u, 0u);
        }
        return TT(0u, 0u);
    }
    var base = w;
    var e = x64_w_TT(b);
    var r = one;
    loop {
        if ((e.x | e.y) == 0u) { break; }
        if ((e.x & 1u) != 0u) { r = x64w_mul(r, base); }
        base = x64w_mul(base, base);
        e = x64w_shr(e, 1u, false);
    }
    return x64_v_TT(r);
}

// ---- bitwise
// @fn x64_bitwise_and i64e u64e
fn x64_bitwise_and_TT(a: TT, b: TT) -> TT { return TT(a.lo & b.lo, a.hi & b.hi); }
// @fn x64_bitwise_or i64e u64e
fn x64_bitwise_or_TT(a: TT, b: TT) -> TT { return TT(a.lo | b.lo, a.hi | b.hi); }
// @fn x64_bitwise_xor i64e u64e
fn x64_bitwise_xor_TT(a: TT, b: TT) -> TT { return TT(a.lo ^ b.lo, a.hi ^ b.hi); }
// @fn x64_bitwise_invert i64e u64e
fn x64_bitwise_invert_TT(a: TT) -> TT { return TT(~a.lo, ~a.hi); }
// @fn x64_shift_ok i64e u64e
fn x64_shift_ok_TT(s: TT) -> bool { return s.hi == 0u && s.lo < 64u; }
// @fn x64_bitwise_left_shift i64e u64e
fn x64_bitwise_left_shift_TT(a: TT, s: TT) -> TT {
    // shifts by >= 64 (or negative) give 0 (NumPy)
    if (!x64_shift_ok_TT(s)) { return TT(0u, 0u); }
    return x64_v_TT(x64w_shl(x64_w_TT(a), s.lo));
}
// @fn x64_bitwise_right_shift i64e u64e
fn x64_bitwise_right_shift_TT(a: TT, s: TT) -> TT {
    // arithmetic for int64; shifts by >= 64 (or negative) give 0 or -1 (NumPy)
    if (!x64_shift_ok_TT(s)) {
        let fill = select(0u, 0xFFFFFFFFu, x64_isneg_TT(a));
        return TT(fill, fill);
    }
    return x64_v_TT(x64w_shr(x64_w_TT(a), s.lo, x64_signed_TT()));
}

// ---- integers unchanged, predicates
// @fn x64_positive i64e u64e
fn x64_positive_TT(a: TT) -> TT { return a; }
// @fn x64_ceil i64e u64e
fn x64_ceil_TT(a: TT) -> TT { return a; }
// @fn x64_floor i64e u64e
fn x64_floor_TT(a: TT) -> TT { return a; }
// @fn x64_round i64e u64e
fn x64_round_TT(a: TT) -> TT { return a; }
// @fn x64_trunc i64e u64e
fn x64_trunc_TT(a: TT) -> TT { return a; }
// @fn x64_conj i64e u64e
fn x64_conj_TT(a: TT) -> TT { return a; }
// @fn x64_real i64e u64e
fn x64_real_TT(a: TT) -> TT { return a; }
// @fn x64_isfinite i64e u64e
fn x64_isfinite_TT(a: TT) -> bool { return true; }
// @fn x64_isinf i64e u64e
fn x64_isinf_TT(a: TT) -> bool { return false; }
// @fn x64_isnan i64e u64e
fn x64_isnan_TT(a: TT) -> bool { return false; }
