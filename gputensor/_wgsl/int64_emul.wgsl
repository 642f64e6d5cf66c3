// int64 / uint64 as two 32-bit words, for adapters without `shader-int64`.
// The compute and storage types are the structs `i64e` / `u64e` { lo: u32, hi: u32 }: NumPy's
// little-endian byte layout, so host copies stay plain byte copies. They are structs, not
// vec2<u32>, so a kernel that does not know them (`+`, `<`, `select`, `T(0)`) fails to compile
// instead of computing per word; moving values (loads, stores, gathers) needs nothing.
// `kernels.with_helpers` declares the structs in every kernel that names them.
// A function library as ewise_helpers.wgsl (`NAME_{{T}}`: for i64e and u64e); `x64_<op>_<type>` is
// the form of elementwise op <op> (elementwise_ops.expression renders the op table's int64
// rows against them). `x64w_*` work on the raw words as vec2<u32> (x: low, y: high).

// ---- raw words
fn x64w_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn x64w_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

fn x64w_neg(a: vec2<u32>) -> vec2<u32> { return x64w_sub(vec2<u32>(0u, 0u), a); }

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

fn x64w_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    // the low 64 bits of the product (wraps as NumPy)
    let p = x64w_mul32(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}

fn x64w_ult(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }

fn x64w_shl(a: vec2<u32>, s: u32) -> vec2<u32> {
    // s < 64
    if (s == 0u) { return a; }
    if (s >= 32u) { return vec2<u32>(0u, a.x << (s - 32u)); }
    return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s)));
}

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

fn x64w_clz(a: vec2<u32>) -> u32 {
    if (a.y != 0u) { return countLeadingZeros(a.y); }
    return 32u + countLeadingZeros(a.x);
}

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

fn x64w_from_f32(x: f32) -> vec2<u32> {
    // trunc(|x|) as an unsigned value (|x| < 2^64; every step is exact)
    let t = trunc(abs(x));
    if (!(t < 18446744073709551616.0)) { return vec2<u32>(0u, 0x80000000u); }
    let hi = floor(t / 4294967296.0);
    return vec2<u32>(u32(t - hi * 4294967296.0), u32(hi));
}

fn x64w_to_f64(a: vec2<u32>) -> f64 {
    // the unsigned value a, rounded to nearest even (shader-f64): hi * 2^32 is exact, so the
    // one addition rounds the exact value once
    return f64(a.y) * 4294967296.0lf + f64(a.x);
}

fn x64w_from_f64(x: f64) -> vec2<u32> {
    // trunc(|x|) as an unsigned value (|x| < 2^64; every step is exact; shader-f64)
    let t = trunc(abs(x));
    if (!(t < 18446744073709551616.0lf)) { return vec2<u32>(0u, 0x80000000u); }
    let hi = floor(t / 4294967296.0lf);
    return vec2<u32>(u32(t - hi * 4294967296.0lf), u32(hi));
}

// ---- the types' words and signedness
fn x64_w_{{T}}(a: {{T}}) -> vec2<u32> { return vec2<u32>(a.lo, a.hi); }
fn x64_v_{{T}}(w: vec2<u32>) -> {{T}} { return {{T}}(w.x, w.y); }
fn x64_signed_i64e() -> bool { return true; }
fn x64_signed_u64e() -> bool { return false; }
fn x64_isneg_{{T}}(a: {{T}}) -> bool { return x64_signed_{{T}}() && (a.hi >> 31u) != 0u; }
fn x64_iszero_{{T}}(a: {{T}}) -> bool { return (a.lo | a.hi) == 0u; }
fn x64_mag_{{T}}(a: {{T}}) -> vec2<u32> {
    // |a| as unsigned words (the minimum of int64 is 2^63)
    let w = x64_w_{{T}}(a);
    return select(w, x64w_neg(w), x64_isneg_{{T}}(a));
}

// ---- conversions (wgsl_types.convert)
fn x64_from_i32_{{T}}(x: i32) -> {{T}} { return {{T}}(bitcast<u32>(x), select(0u, 0xFFFFFFFFu, x < 0i)); }
fn x64_from_u32_{{T}}(x: u32) -> {{T}} { return {{T}}(x, 0u); }
fn x64_from_bool_{{T}}(x: bool) -> {{T}} { return {{T}}(select(0u, 1u, x), 0u); }
fn x64_from_f32_{{T}}(x: f32) -> {{T}} {
    let m = x64w_from_f32(x);
    return x64_v_{{T}}(select(m, x64w_neg(m), x < 0.0));
}
fn x64_from_f64_{{T}}(x: f64) -> {{T}} {
    let m = x64w_from_f64(x);
    return x64_v_{{T}}(select(m, x64w_neg(m), x < 0.0lf));
}
fn x64_to_f64_{{T}}(a: {{T}}) -> f64 {
    let f = x64w_to_f64(x64_mag_{{T}}(a));
    return select(f, -f, x64_isneg_{{T}}(a));
}
fn x64_to_f32_{{T}}(a: {{T}}) -> f32 {
    let f = x64w_to_f32(x64_mag_{{T}}(a));
    return select(f, -f, x64_isneg_{{T}}(a));
}
fn x64_to_i32_{{T}}(a: {{T}}) -> i32 { return bitcast<i32>(a.lo); }
fn x64_to_u32_{{T}}(a: {{T}}) -> u32 { return a.lo; }
fn x64_to_bool_{{T}}(a: {{T}}) -> bool { return !x64_iszero_{{T}}(a); }
fn x64_to_i64e_u64e(a: u64e) -> i64e { return i64e(a.lo, a.hi); }
fn x64_to_u64e_i64e(a: i64e) -> u64e { return u64e(a.lo, a.hi); }

// ---- comparisons
fn x64_less_{{T}}(a: {{T}}, b: {{T}}) -> bool {
    let flip = select(0u, 0x80000000u, x64_signed_{{T}}());
    return x64w_ult(vec2<u32>(a.lo, a.hi ^ flip), vec2<u32>(b.lo, b.hi ^ flip));
}
fn x64_equal_{{T}}(a: {{T}}, b: {{T}}) -> bool { return a.lo == b.lo && a.hi == b.hi; }
fn x64_not_equal_{{T}}(a: {{T}}, b: {{T}}) -> bool { return !x64_equal_{{T}}(a, b); }
fn x64_greater_{{T}}(a: {{T}}, b: {{T}}) -> bool { return x64_less_{{T}}(b, a); }
fn x64_less_equal_{{T}}(a: {{T}}, b: {{T}}) -> bool { return !x64_less_{{T}}(b, a); }
fn x64_greater_equal_{{T}}(a: {{T}}, b: {{T}}) -> bool { return !x64_less_{{T}}(a, b); }
fn x64_maximum_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} { if (x64_less_{{T}}(a, b)) { return b; } return a; }
fn x64_minimum_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} { if (x64_less_{{T}}(b, a)) { return b; } return a; }
fn x64_clip_{{T}}(x: {{T}}, lo: {{T}}, hi: {{T}}) -> {{T}} { return x64_minimum_{{T}}(x64_maximum_{{T}}(x, lo), hi); }
fn x64_where_{{T}}(c: bool, a: {{T}}, b: {{T}}) -> {{T}} { if (c) { return a; } return b; }

// ---- arithmetic
fn x64_add_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} { return x64_v_{{T}}(x64w_add(x64_w_{{T}}(a), x64_w_{{T}}(b))); }
fn x64_subtract_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} { return x64_v_{{T}}(x64w_sub(x64_w_{{T}}(a), x64_w_{{T}}(b))); }
fn x64_multiply_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} { return x64_v_{{T}}(x64w_mul(x64_w_{{T}}(a), x64_w_{{T}}(b))); }
fn x64_square_{{T}}(a: {{T}}) -> {{T}} { return x64_multiply_{{T}}(a, a); }
fn x64_negative_{{T}}(a: {{T}}) -> {{T}} { return x64_v_{{T}}(x64w_neg(x64_w_{{T}}(a))); }
fn x64_abs_{{T}}(a: {{T}}) -> {{T}} { return x64_v_{{T}}(x64_mag_{{T}}(a)); }
fn x64_sign_{{T}}(a: {{T}}) -> {{T}} {
    if (x64_isneg_{{T}}(a)) { return {{T}}(0xFFFFFFFFu, 0xFFFFFFFFu); }
    return {{T}}(select(1u, 0u, x64_iszero_{{T}}(a)), 0u);
}
fn x64_floor_divide_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // rounds toward -inf (NumPy); division by zero gives 0; MIN // -1 wraps to MIN
    if (x64_iszero_{{T}}(b)) { return {{T}}(0u, 0u); }
    let qr = x64w_udivmod(x64_mag_{{T}}(a), x64_mag_{{T}}(b));
    var q = qr.xy;
    if (x64_isneg_{{T}}(a) != x64_isneg_{{T}}(b)) {
        q = x64w_neg(q);
        if ((qr.z | qr.w) != 0u) { q = x64w_sub(q, vec2<u32>(1u, 0u)); }
    }
    return x64_v_{{T}}(q);
}
fn x64_remainder_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // the sign of the divisor (NumPy); remainder by zero gives 0
    if (x64_iszero_{{T}}(b)) { return {{T}}(0u, 0u); }
    let qr = x64w_udivmod(x64_mag_{{T}}(a), x64_mag_{{T}}(b));
    var r = select(qr.zw, x64w_neg(qr.zw), x64_isneg_{{T}}(a));
    if ((r.x | r.y) != 0u && x64_isneg_{{T}}(a) != x64_isneg_{{T}}(b)) { r = x64w_add(r, x64_w_{{T}}(b)); }
    return x64_v_{{T}}(r);
}
fn x64_pow_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // repeated squaring with wrap-around; negative exponents (int64): 1/a truncated
    let one = vec2<u32>(1u, 0u);
    let w = x64_w_{{T}}(a);
    if (x64_isneg_{{T}}(b)) {
        if (w.x == 1u && w.y == 0u) { return {{T}}(1u, 0u); }
        if (w.x == 0xFFFFFFFFu && w.y == 0xFFFFFFFFu) {
            if ((b.lo & 1u) != 0u) { return a; }
            return {{T}}(1u, 0u);
        }
        return {{T}}(0u, 0u);
    }
    var base = w;
    var e = x64_w_{{T}}(b);
    var r = one;
    loop {
        if ((e.x | e.y) == 0u) { break; }
        if ((e.x & 1u) != 0u) { r = x64w_mul(r, base); }
        base = x64w_mul(base, base);
        e = x64w_shr(e, 1u, false);
    }
    return x64_v_{{T}}(r);
}

// ---- bitwise
fn x64_bitwise_and_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} { return {{T}}(a.lo & b.lo, a.hi & b.hi); }
fn x64_bitwise_or_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} { return {{T}}(a.lo | b.lo, a.hi | b.hi); }
fn x64_bitwise_xor_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} { return {{T}}(a.lo ^ b.lo, a.hi ^ b.hi); }
fn x64_bitwise_invert_{{T}}(a: {{T}}) -> {{T}} { return {{T}}(~a.lo, ~a.hi); }
fn x64_shift_ok_{{T}}(s: {{T}}) -> bool { return s.hi == 0u && s.lo < 64u; }
fn x64_bitwise_left_shift_{{T}}(a: {{T}}, s: {{T}}) -> {{T}} {
    // shifts by >= 64 (or negative) give 0 (NumPy)
    if (!x64_shift_ok_{{T}}(s)) { return {{T}}(0u, 0u); }
    return x64_v_{{T}}(x64w_shl(x64_w_{{T}}(a), s.lo));
}
fn x64_bitwise_right_shift_{{T}}(a: {{T}}, s: {{T}}) -> {{T}} {
    // arithmetic for int64; shifts by >= 64 (or negative) give 0 or -1 (NumPy)
    if (!x64_shift_ok_{{T}}(s)) {
        let fill = select(0u, 0xFFFFFFFFu, x64_isneg_{{T}}(a));
        return {{T}}(fill, fill);
    }
    return x64_v_{{T}}(x64w_shr(x64_w_{{T}}(a), s.lo, x64_signed_{{T}}()));
}

// ---- integers unchanged, predicates
fn x64_positive_{{T}}(a: {{T}}) -> {{T}} { return a; }
fn x64_ceil_{{T}}(a: {{T}}) -> {{T}} { return a; }
fn x64_floor_{{T}}(a: {{T}}) -> {{T}} { return a; }
fn x64_round_{{T}}(a: {{T}}) -> {{T}} { return a; }
fn x64_trunc_{{T}}(a: {{T}}) -> {{T}} { return a; }
fn x64_conj_{{T}}(a: {{T}}) -> {{T}} { return a; }
fn x64_real_{{T}}(a: {{T}}) -> {{T}} { return a; }
fn x64_isfinite_{{T}}(a: {{T}}) -> bool { return true; }
fn x64_isinf_{{T}}(a: {{T}}) -> bool { return false; }
fn x64_isnan_{{T}}(a: {{T}}) -> bool { return false; }
