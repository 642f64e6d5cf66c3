// Helper functions of the elementwise op table (_backend/elementwise_ops.py), for floats.
// A function library (`kernels.LIBRARIES`): ordinary WGSL functions, each with the comment lines
// right above it; a function named `NAME_{{T}}` is made for every type of the library (here
// f32 and f64) as NAME_<type>, `{{T}}` in its text standing for that type. The generator pulls
// in only the functions an expression uses (plus their dependencies), so kernels that never
// touch f64 or i64 do not need those adapter features. The integer helpers: ewise_int.wgsl.

fn ew_exp_f32(x: f32) -> f32 { return exp(x); }
fn ew_exp_f64(x: f64) -> f64 { return exp_f64(x); }
fn ew_log_f32(x: f32) -> f32 { return log_f32(x); }
fn ew_log_f64(x: f64) -> f64 { return log_f64(x); }
fn ew_log10_f32(x: f32) -> f32 { return log10_f32(x); }
fn ew_log10_f64(x: f64) -> f64 { return log_f64(x) * f64(0.43429448190325182765); }

// NaN test from the bits: naga compiles float `!=` as an ordered comparison, so `x != x` is
// false for NaN (measured on lavapipe).
fn ew_isnan_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn ew_isnan_f64(x: f64) -> bool { return (bitcast<u64>(x) << 1u) > (u64(0xffe00000u) << 32u); }

// From the bits, as ew_isnan: Vulkan drivers may assume no infinities in float arithmetic and
// comparisons (no SignedZeroInfNanPreserve mode), so only integer tests are reliable.
fn ew_isinf_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn ew_isinf_f64(x: f64) -> bool { return (bitcast<u64>(x) << 1u) == (u64(0xffe00000u) << 32u); }
fn ew_nan_f32() -> f32 { let bits = 0x7fc00000u; return bitcast<f32>(bits); }
fn ew_nan_f64() -> f64 { return bitcast<f64>(u64(0x7ff80000u) << 32u); }
fn ew_inf_f32() -> f32 { let bits = 0x7f800000u; return bitcast<f32>(bits); }
fn ew_inf_f64() -> f64 { return bitcast<f64>(u64(0x7ff00000u) << 32u); }
// f32math: C99 special cases, about 1 ulp elsewhere (the builtin is ~2e-5 relative on lavapipe).
fn ew_atan2_f32(y: f32, x: f32) -> f32 { return atan2_f32(y, x); }
fn ew_atan2_f64(y: f64, x: f64) -> f64 { return atan2_f64(y, x); }

fn ew_expm1_f32(x: f32) -> f32 {
    // Near 0 a Taylor polynomial (relative error < 1e-9 for |x| <= 0.5): the driver's exp and
    // log are accurate only in absolute terms near 1, so Kahan's (u-1)*x/log(u) is not enough.
    if (!(abs(x) <= 0.5)) { return exp(x) - 1.0; }
    return x * (1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + x * 0.25 * (1.0 + x * 0.2 * (1.0 + x * (1.0 / 6.0)
        * (1.0 + x * (1.0 / 7.0) * (1.0 + x * 0.125 * (1.0 + x * (1.0 / 9.0)))))))));
}
fn ew_expm1_f64(x: f64) -> f64 {
    // Kahan: (u - 1) * x / log(u) with u = exp(x), exact to a few ulp with the f64 library.
    if (abs(x) > f64(0.5lf) || ew_isnan_f64(x)) { return exp_f64(x) - f64(1); }
    let u = _f64_opq(exp_f64(x));
    if (u == f64(1)) { return x; }
    return (u - f64(1)) * x / log_f64(u);
}

// f32math (about 1 ulp everywhere; the series this replaced was ~3.6 ulp and used the builtin log
// above |x| = 0.5).
fn ew_log1p_f32(x: f32) -> f32 { return log1p_f32(x); }
fn ew_log1p_f64(x: f64) -> f64 {
    if (abs(x) > f64(0.5lf) || ew_isnan_f64(x)) { return log_f64(f64(1) + x); }
    // Kahan: log(u) * x / (u - 1), u = 1 + x; _f64_opq keeps the compiler from folding
    // (1 + x) - 1 back into x, which would defeat the correction.
    let u = _f64_opq(f64(1) + x);
    if (u == f64(1)) { return x; }
    return log_f64(u) * x / (u - f64(1));
}

fn ew_sinh_{{T}}(x: {{T}}) -> {{T}} {
    let a = abs(x);
    var r: {{T}};
    if (a > {{T}}(20)) {
        r = ew_exp_{{T}}(a - {{T}}(0.69314718055994530942));
    } else {
        let e = ew_expm1_{{T}}(a);
        r = {{T}}(0.5) * (e + e / (e + {{T}}(1)));
    }
    return select(r, -r, ew_signbit_{{T}}(x));
}

fn ew_cosh_{{T}}(x: {{T}}) -> {{T}} {
    let a = abs(x);
    if (a > {{T}}(20)) { return ew_exp_{{T}}(a - {{T}}(0.69314718055994530942)); }
    let e = ew_exp_{{T}}(a);
    return {{T}}(0.5) * (e + {{T}}(1) / e);
}

// Cephes tanhf: an odd minimax polynomial below 0.625 (relative error < 1e-7), 1 - 2/(e^2x + 1)
// above. (The expm1 form below loses accuracy in f32 where log is approximate, e.g. NVIDIA:
// 2e-5 relative near 0.)
fn ew_tanh_f32(x: f32) -> f32 {
    let a = abs(x);
    if (a < 1e-4 || ew_isnan_f32(x)) { return x; }
    if (a < 0.625) {
        let s = x * x;
        return ((((-5.70498872745e-3 * s + 2.06390887954e-2) * s - 5.37397155531e-2) * s
                 + 1.33314422036e-1) * s - 3.33332819422e-1) * s * x + x;
    }
    let r = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return select(r, -r, x < 0.0);
}

fn ew_tanh_f64(x: f64) -> f64 {
    let e = ew_expm1_f64(f64(-2) * abs(x));
    let r = -e / (e + f64(2));
    return select(r, -r, ew_signbit_f64(x));
}

fn ew_asinh_{{T}}(x: {{T}}) -> {{T}} {
    let a = abs(x);
    var r: {{T}};
    if (a > {{T}}(1e8)) {
        r = ew_log_{{T}}(a) + {{T}}(0.69314718055994530942);
    } else {
        r = ew_log1p_{{T}}(a + a * a / ({{T}}(1) + sqrt({{T}}(1) + a * a)));
    }
    return select(r, -r, ew_signbit_{{T}}(x));
}

fn ew_acosh_{{T}}(x: {{T}}) -> {{T}} {
    if (x < {{T}}(1)) { return ew_nan_{{T}}(); }  // (for x < -1 the formula below is finite)
    if (x > {{T}}(1e8)) { return ew_log_{{T}}(x) + {{T}}(0.69314718055994530942); }
    let t = x - {{T}}(1);
    return ew_log1p_{{T}}(t + sqrt({{T}}(2) * t + t * t));
}

fn ew_atanh_{{T}}(x: {{T}}) -> {{T}} {
    let a = abs(x);
    let r = {{T}}(0.5) * ew_log1p_{{T}}({{T}}(2) * a / ({{T}}(1) - a));
    return select(r, -r, ew_signbit_{{T}}(x));
}

fn ew_signbit_f32(x: f32) -> bool { return (bitcast<u32>(x) >> 31u) != 0u; }
fn ew_signbit_f64(x: f64) -> bool { return (bitcast<u64>(x) >> 63u) != u64(0); }

fn ew_sigmoid_{{T}}(x: {{T}}) -> {{T}} {
    if (x >= {{T}}(0)) { return {{T}}(1) / ({{T}}(1) + ew_exp_{{T}}(-x)); }
    let e = ew_exp_{{T}}(x);
    return e / ({{T}}(1) + e);
}

fn ew_erf_{{T}}(x: {{T}}) -> {{T}} {
    // Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7).
    let a = abs(x);
    let t = {{T}}(1) / ({{T}}(1) + {{T}}(0.3275911) * a);
    let p = t * ({{T}}(0.254829592) + t * ({{T}}(-0.284496736) + t * ({{T}}(1.421413741) + t * ({{T}}(-1.453152027) + t * {{T}}(1.061405429)))));
    let r = {{T}}(1) - p * ew_exp_{{T}}(-a * a);
    return select(r, -r, ew_signbit_{{T}}(x));
}

fn ew_fmod_f32(x: f32, y: f32) -> f32 {
    // Exact C fmod by long division on the integer significands (x - y*trunc(x/y) is not exact
    // once the quotient has more than 24 bits). Fields are cut with shifts only.
    let ux = bitcast<u32>(x);
    let uy = bitcast<u32>(y);
    let sx = (ux >> 31u) << 31u;
    let ax = (ux << 1u) >> 1u;
    let ay = (uy << 1u) >> 1u;
    if (ay == 0u || ax >= 0x7f800000u || ay > 0x7f800000u) { return ew_nan_f32(); }
    if (ay == 0x7f800000u || ax < ay) { return x; }
    if (ax == ay) { return bitcast<f32>(sx); }
    var ex = i32(ax >> 23u);
    var ey = i32(ay >> 23u);
    var mx = (ax << 9u) >> 9u;
    var my = (ay << 9u) >> 9u;
    if (ex == 0) { loop { if (mx >= 0x800000u) { break; } mx = mx << 1u; ex = ex - 1; } ex = ex + 1; } else { mx = mx | 0x800000u; }
    if (ey == 0) { loop { if (my >= 0x800000u) { break; } my = my << 1u; ey = ey - 1; } ey = ey + 1; } else { my = my | 0x800000u; }
    loop {
        if (ex <= ey) { break; }
        if (mx >= my) { mx = mx - my; if (mx == 0u) { return bitcast<f32>(sx); } }
        mx = mx << 1u;
        ex = ex - 1;
    }
    if (mx >= my) { mx = mx - my; if (mx == 0u) { return bitcast<f32>(sx); } }
    loop { if (mx >= 0x800000u) { break; } mx = mx << 1u; ex = ex - 1; }
    var bits: u32;
    if (ex > 0) {
        bits = ((mx << 9u) >> 9u) | (u32(ex) << 23u);
    } else {
        bits = mx >> u32(1 - ex);
    }
    return bitcast<f32>(bits | sx);
}
fn ew_fmod_f64(x: f64, y: f64) -> f64 {
    let ux = bitcast<u64>(x);
    let uy = bitcast<u64>(y);
    let sx = (ux >> 63u) << 63u;
    let ax = (ux << 1u) >> 1u;
    let ay = (uy << 1u) >> 1u;
    let inf = u64(0x7ff00000u) << 32u;
    let one = u64(1) << 52u;
    if (ay == u64(0) || ax >= inf || ay > inf) { return ew_nan_f64(); }
    if (ay == inf || ax < ay) { return x; }
    if (ax == ay) { return bitcast<f64>(sx); }
    var ex = i32(ax >> 52u);
    var ey = i32(ay >> 52u);
    var mx = (ax << 12u) >> 12u;
    var my = (ay << 12u) >> 12u;
    if (ex == 0) { loop { if (mx >= one) { break; } mx = mx << 1u; ex = ex - 1; } ex = ex + 1; } else { mx = mx + one; }
    if (ey == 0) { loop { if (my >= one) { break; } my = my << 1u; ey = ey - 1; } ey = ey + 1; } else { my = my + one; }
    loop {
        if (ex <= ey) { break; }
        if (mx >= my) { mx = mx - my; if (mx == u64(0)) { return bitcast<f64>(sx); } }
        mx = mx << 1u;
        ex = ex - 1;
    }
    if (mx >= my) { mx = mx - my; if (mx == u64(0)) { return bitcast<f64>(sx); } }
    loop { if (mx >= one) { break; } mx = mx << 1u; ex = ex - 1; }
    var bits: u64;
    if (ex > 0) {
        bits = ((mx << 12u) >> 12u) + (u64(u32(ex)) << 52u);
    } else {
        bits = mx >> u32(1 - ex);
    }
    return bitcast<f64>(bits + sx);
}

fn ew_copysign_zero_f32(s: f32) -> f32 {
    // +0 or -0 with the sign bit of s, through the bits: compilers that ignore the sign of zero
    // (NVIDIA's) fold select(0.0, -0.0, c) into one constant.
    return bitcast<f32>(bitcast<u32>(s) & 0x80000000u);
}
fn ew_copysign_zero_f64(s: f64) -> f64 {
    return bitcast<f64>((bitcast<u64>(s) >> 63u) << 63u);
}

fn ew_neg_f32(x: f32) -> f32 {
    // -x as a sign-bit flip: NVIDIA compiles -x as 0 - x, which makes -(+0) = +0.
    return bitcast<f32>(bitcast<u32>(x) ^ 0x80000000u);
}
fn ew_neg_f64(x: f64) -> f64 {
    return bitcast<f64>(bitcast<u64>(x) ^ (u64(1) << 63u));
}

fn ew_max_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // NumPy's maximum: NaN propagates, else a > b ? a : b (maximum(0.0, -0.0) is -0.0). The
    // choice is made on the bits so that no compiler turns it into a max instruction, which
    // orders or ignores the sign of zero its own way.
    if (ew_isnan_{{T}}(a) || ew_isnan_{{T}}(b)) { return a + b; }
    return ew_pick_{{T}}(a, b, ew_gt_{{T}}(a, b));
}

fn ew_min_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // NumPy's minimum: NaN propagates, else a < b ? a : b (see ew_max).
    if (ew_isnan_{{T}}(a) || ew_isnan_{{T}}(b)) { return a + b; }
    return ew_pick_{{T}}(a, b, ew_gt_{{T}}(b, a));
}

fn ew_gt_f32(a: f32, b: f32) -> bool {
    // a > b for non-NaN a, b, compared as integers (sign-magnitude bits mapped to a total
    // order; +0 and -0 equal): NVIDIA rewrites a float compare-and-select into its max
    // instruction even when the select is done on the bits.
    let ia = bitcast<i32>(a);
    let ib = bitcast<i32>(b);
    let ka = select(ia, ia ^ 0x7fffffff, ia < 0);
    let kb = select(ib, ib ^ 0x7fffffff, ib < 0);
    return ka > kb && ((bitcast<u32>(a) | bitcast<u32>(b)) << 1u) != 0u;
}
fn ew_gt_f64(a: f64, b: f64) -> bool { return a > b; }

fn ew_pick_f32(a: f32, b: f32, c: bool) -> f32 {
    // c ? a : b, bit for bit.
    return bitcast<f32>(select(bitcast<u32>(b), bitcast<u32>(a), c));
}
fn ew_pick_f64(a: f64, b: f64, c: bool) -> f64 {
    return bitcast<f64>(select(bitcast<u64>(b), bitcast<u64>(a), c));
}

fn ew_floordiv_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // NumPy's npy_divmod, step by step (C's `if (v)` is true for NaN: written !(v == 0)),
    // except for an infinite operand, where the spec's floor(a / b) is the quotient itself:
    // +-inf for infinity // finite, +-0 for finite // infinity (NumPy: NaN and -1.0).
    if (b == {{T}}(0)) { return a / b; }
    if (ew_isinf_{{T}}(a) || ew_isinf_{{T}}(b)) { return a / b; }
    let m = ew_fmod_{{T}}(a, b);
    var d = (a - m) / b;
    if (!(m == {{T}}(0))) {
        if ((b < {{T}}(0)) != (m < {{T}}(0))) { d = d - {{T}}(1); }
    }
    if (!(d == {{T}}(0))) {
        var f = floor(d);
        if (d - f > {{T}}(0.5)) { f = f + {{T}}(1); }
        return f;
    }
    return ew_copysign_zero_{{T}}(a / b);
}

fn ew_mod_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    // NumPy's remainder: the modulus of npy_divmod (sign of the divisor).
    var m = ew_fmod_{{T}}(a, b);
    if (b == {{T}}(0)) { return m; }
    if (!(m == {{T}}(0))) {
        if ((b < {{T}}(0)) != (m < {{T}}(0))) { m = m + b; }
        return m;
    }
    return ew_copysign_zero_{{T}}(b);
}

fn ew_sign_{{T}}(x: {{T}}) -> {{T}} {
    // Through integers so a zero result is +0.0 (a select chain can fold into -0.0).
    if (ew_isnan_{{T}}(x)) { return x; }
    return {{T}}(i32(x > {{T}}(0)) - i32(x < {{T}}(0)));
}

fn ew_atan_f32(x: f32) -> f32 { return atan_f32(x); }
fn ew_atan_f64(x: f64) -> f64 { return atan_f64(x); }

fn ew_pow_{{T}}(x: {{T}}, y: {{T}}) -> {{T}} {
    if (y == {{T}}(0) || x == {{T}}(1)) { return {{T}}(1); }
    if (ew_isnan_{{T}}(x) || ew_isnan_{{T}}(y)) { return x + y; }
    let ay = abs(y);
    let y_int = floor(y) == y;
    let y_odd = y_int && ay < {{T}}(9007199254740992) && floor(ay * {{T}}(0.5)) * {{T}}(2) != ay;
    let ax = abs(x);
    if (x < {{T}}(0) && !y_int && !ew_isinf_{{T}}(x)) { return ew_nan_{{T}}(); }
    var r: {{T}};
    if (ax == {{T}}(0)) {
        r = select({{T}}(0), ew_inf_{{T}}(), y < {{T}}(0));
    } else if (ew_isinf_{{T}}(y)) {
        // y infinite
        if (ax == {{T}}(1)) { return {{T}}(1); }
        r = select({{T}}(0), ay, (ax > {{T}}(1)) == (y > {{T}}(0)));
    } else if (ew_isinf_{{T}}(x)) {
        // x infinite
        r = select({{T}}(0), ax, y > {{T}}(0));
    } else {
        r = ew_exp_{{T}}(y * ew_log_{{T}}(ax));
    }
    if ((x < {{T}}(0) || (x == {{T}}(0) && ew_signbit_{{T}}(x))) && y_odd) { r = -r; }
    return r;
}

fn ew_hypot_{{T}}(x: {{T}}, y: {{T}}) -> {{T}} {
    let a = abs(x);
    let b = abs(y);
    if (ew_isinf_{{T}}(a)) { return a; }
    if (ew_isinf_{{T}}(b)) { return b; }
    if (ew_isnan_{{T}}(a) || ew_isnan_{{T}}(b)) { return a + b; }
    let m = max(a, b);
    let n = min(a, b);
    if (m == {{T}}(0)) { return {{T}}(0); }
    let q = n / m;
    return m * sqrt({{T}}(1) + q * q);
}

fn ew_logaddexp_{{T}}(x: {{T}}, y: {{T}}) -> {{T}} {
    if (ew_isnan_{{T}}(x) || ew_isnan_{{T}}(y)) { return x + y; }
    if (x == y) { return x + {{T}}(0.69314718055994530942); }
    let m = max(x, y);
    return m + ew_log1p_{{T}}(ew_exp_{{T}}(-abs(x - y)));
}

fn ew_nextafter_f32(x: f32, y: f32) -> f32 {
    if (ew_isnan_f32(x) || ew_isnan_f32(y)) { return x + y; }
    if (x == y) { return y; }
    if (x == 0.0) { return select(bitcast<f32>(1u), bitcast<f32>(0x80000001u), y < 0.0); }
    let b = bitcast<u32>(x);
    return bitcast<f32>(select(b - 1u, b + 1u, (x < y) == (x > 0.0)));
}
fn ew_nextafter_f64(x: f64, y: f64) -> f64 {
    if (ew_isnan_f64(x) || ew_isnan_f64(y)) { return x + y; }
    if (x == y) { return y; }
    if (x == f64(0.0lf)) { return select(bitcast<f64>(u64(1)), bitcast<f64>(u64(1) | (u64(1) << 63u)), y < f64(0.0lf)); }
    let b = bitcast<u64>(x);
    return bitcast<f64>(select(b - u64(1), b + u64(1), (x < y) == (x > f64(0.0lf))));
}

fn ew_nextafter16_f32(x: f32, y: f32) -> f32 {
    // nextafter in float16 for values computed in f32 (exact float16 values in, float16 out).
    if (ew_isnan_f32(x) || ew_isnan_f32(y)) { return x + y; }
    if (x == y) { return y; }  // as C's nextafter: y when equal (nextafter(0.0, -0.0) is -0.0)
    if (x == 0.0) { return select(unpack2x16float(1u).x, unpack2x16float(0x8001u).x, y < 0.0); }
    let b = pack2x16float(vec2<f32>(x, 0.0)) & 0xFFFFu;
    return unpack2x16float(select(b - 1u, b + 1u, (x < y) == (x > 0.0))).x;
}

fn ew_clip_{{T}}(x: {{T}}, lo: {{T}}, hi: {{T}}) -> {{T}} {
    if (ew_isnan_{{T}}(x) || ew_isnan_{{T}}(lo) || ew_isnan_{{T}}(hi)) { return x + lo + hi; }
    return min(max(x, lo), hi);
}


// exp(-a*a/2) for a >= 0 with a*a split exactly (a = hi + lo, hi with 12 significant bits), so
// the rounding of a*a (up to ~1e-5 relative in the result near underflow) does not show.
fn ew_exp_mhalfsq_f32(a: f32) -> f32 {
    let hi = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
    let lo = a - hi;
    return exp(-0.5 * hi * hi) * exp(-0.5 * lo * (a + hi));
}
fn ew_exp_mhalfsq_f64(a: f64) -> f64 {
    let hi = bitcast<f64>(bitcast<u64>(a) & ((u64(0xffffffffu) << 32u) | u64(0xf8000000u)));
    let lo = a - hi;
    return exp_f64(f64(-0.5) * hi * hi) * exp_f64(f64(-0.5) * lo * (a + hi));
}

// erfc(a / sqrt 2) for a >= 0, relative error ~1e-7: Numerical Recipes' Chebyshev fit (erfcc,
// < 1.2e-7) with its exp(-z^2) factor taken exactly from a.
fn ew_erfc_half_f32(a: f32) -> f32 {
    let z = a * 0.70710678118654752440;
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
            t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    return t * exp(p) * ew_exp_mhalfsq_f32(a);
}
// erfc(a / sqrt 2) for a >= 0, relative error ~1e-15. z = a / sqrt 2 below 1.5: 1 - erf(z) by the
// positive series erf(z) = 2/sqrt(pi) exp(-z^2) sum_n (2z^2)^n z / (2n+1)!! (at most 26 terms);
// above: the continued fraction sqrt(pi) exp(z^2) erfc(z) = 1/(z+ (1/2)/(z+ 1/(z+ (3/2)/(z+ ...))))
// (modified Lentz, at most ~90 terms); 0 past z = 27.3 (underflow).
fn ew_erfc_half_f64(a: f64) -> f64 {
    let z = a * f64(0.70710678118654752440);
    if (z > f64(27.3)) { return f64(0.0); }
    if (z < f64(1.5)) {
        let z2 = z * z;
        var term = z;
        var sum = z;
        for (var n = 1; n < 64; n++) {
            term = term * (f64(2.0) * z2) / f64(2 * n + 1);
            sum = sum + term;
            if (term < sum * f64(1e-17)) { break; }
        }
        return f64(1.0) - f64(1.12837916709551257390) * ew_exp_mhalfsq_f64(a) * sum;
    }
    var f = z;
    var c = z;
    var d = f64(0.0);
    for (var k = 1; k < 200; k++) {
        let h = f64(k) * f64(0.5);
        d = f64(1.0) / (z + h * d);
        c = z + h / c;
        let delta = c * d;
        f = f * delta;
        if (abs(delta - f64(1.0)) < f64(1e-16)) { break; }
    }
    return ew_exp_mhalfsq_f64(a) / (f64(1.77245385090551602730) * f);
}

// gelu(x) = x/2 (1 + erf(x/sqrt 2)), through erfc(|x|/sqrt 2) so that the negative tail keeps
// its relative accuracy (1 + erf cancels there).
fn ew_gelu_{{T}}(x: {{T}}) -> {{T}} {
    if (ew_isnan_{{T}}(x)) { return x; }
    if (ew_isinf_{{T}}(x)) { return select(x, -{{T}}(0), x < {{T}}(0)); }  // the limits: x and -0
    let c = ew_erfc_half_{{T}}(abs(x));
    return select({{T}}(0.5) * x * ({{T}}(2) - c), {{T}}(0.5) * x * c, x < {{T}}(0));
}

fn ew_f16_bits_f32(x: f32) -> u32 {
    // f32 -> IEEE binary16 bits, round to nearest even; overflow to inf, NaN stays NaN.
    let f = bitcast<u32>(x);
    let sign = (f >> 16u) & 0x8000u;
    let fexp = f & 0x7F800000u;
    var fsig = f & 0x007FFFFFu;
    if (fexp >= 0x47800000u) {
        if (fexp == 0x7F800000u && fsig != 0u) {
            return sign | 0x7E00u | (fsig >> 13u);
        }
        return sign | 0x7C00u;
    }
    if (fexp <= 0x38000000u) {
        if (fexp < 0x33000000u) { return sign; }
        let e = fexp >> 23u;
        fsig = (0x00800000u + fsig) >> (113u - e);
        if ((fsig & 0x3FFFu) != 0x1000u || (f & 0x7FFu) != 0u) { fsig = fsig + 0x1000u; }
        return sign + (fsig >> 13u);
    }
    let hexp = (fexp - 0x38000000u) >> 13u;
    if ((fsig & 0x3FFFu) != 0x1000u) { fsig = fsig + 0x1000u; }
    return sign + hexp + (fsig >> 13u);
}
