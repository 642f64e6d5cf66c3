// Complex helpers of the elementwise op table (_backend/elementwise_ops.py): a complex value is
// a vec2 of its parts' float type (.x real, .y imaginary), stored interleaved as NumPy stores
// complex64/complex128. A function library (see ewise_helpers.wgsl): a function named
// `NAME_{{T}}` is made for T = f32 and f64, the parts' type, as NAME_f32 and NAME_f64.
//
// Semantics: NumPy's values (multiplication, Smith's division and the small-integer powers as
// NumPy computes them) and the Array API's special cases (C99 Annex G) for exp, expm1, log,
// log1p, sqrt, the trigonometric and hyperbolic functions and their inverses. Sign flips go
// through ew_neg (compilers that turn -x into 0 - x lose the sign of zero); real functions come
// from f32math/f64math, so results are accurate on every adapter. The inverse functions follow
// Hull, Fairgrieve and Tang (ACM TOMS 23, 1997): no overflow or cancellation for huge, tiny or
// near-branch-point arguments.

fn _cx_pi_{{T}}() -> {{T}} { return {{T}}(3.14159265358979323846); }
fn _cx_nan2_{{T}}() -> vec2<{{T}}> { return vec2<{{T}}>(ew_nan_{{T}}(), ew_nan_{{T}}()); }
// The parts' bits as one unsigned type, and back. Special values (infinities, the sign of zero)
// are built and chosen on these bits: Vulkan drivers may compile float arithmetic, selects and
// comparisons assuming no infinities, NaNs or signed zeros (NVIDIA does), so `inf * v`,
// `select(v, -v, c)` or `abs(x) < inf` lose exactly the values these functions exist to get right.
fn _cx_bits_f32(x: f32) -> u32 { return bitcast<u32>(x); }
fn _cx_bits_f64(x: f64) -> u64 { return bitcast<u64>(x); }
fn _cx_float_f32(b: u32) -> f32 { return bitcast<f32>(b); }
fn _cx_float_f64(b: u64) -> f64 { return bitcast<f64>(b); }
fn _cx_sign_mask_f32() -> u32 { return 0x80000000u; }
fn _cx_sign_mask_f64() -> u64 { return u64(1) << 63u; }
fn _cx_isfinite_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn _cx_isfinite_f64(x: f64) -> bool {
    let e = u64(0x7ff00000u) << 32u;
    return (bitcast<u64>(x) & e) != e;
}
// |a| with the sign bit of b.
fn _cx_copysign_{{T}}(a: {{T}}, b: {{T}}) -> {{T}} {
    return _cx_negif_{{T}}(abs(a), ew_signbit_{{T}}(b));
}
// -v where c holds, v otherwise (a flip of the sign bit).
fn _cx_negif_{{T}}(v: {{T}}, c: bool) -> {{T}} {
    let b = _cx_bits_{{T}}(v);
    return _cx_float_{{T}}(select(b, b ^ _cx_sign_mask_{{T}}(), c));
}
// select(f, t, c) on the bits.
fn _cx_pick_{{T}}(f: {{T}}, t: {{T}}, c: bool) -> {{T}} {
    return _cx_float_{{T}}(select(_cx_bits_{{T}}(f), _cx_bits_{{T}}(t), c));
}
// An infinity with s's sign times v, as IEEE multiplies: NaN for a zero or NaN v, else an
// infinity with the product's sign.
fn _cx_inf_mul_{{T}}(s: {{T}}, v: {{T}}) -> {{T}} {
    let inf = _cx_bits_{{T}}(ew_inf_{{T}}());
    let sign = (_cx_bits_{{T}}(s) ^ _cx_bits_{{T}}(v)) & _cx_sign_mask_{{T}}();
    return _cx_pick_{{T}}(_cx_float_{{T}}(inf | sign), ew_nan_{{T}}(), v == {{T}}(0) || ew_isnan_{{T}}(v));
}
// Above this |z| the inverse functions use their asymptotic forms (exact to the last bit).
fn _cx_big_f32() -> f32 { return 1.0e10; }
fn _cx_big_f64() -> f64 { return f64(1.0e20); }
// Below this, squares lose bits to underflow.
fn _cx_tiny_f32() -> f32 { return 1.0e-18; }
fn _cx_tiny_f64() -> f64 { return f64(1.0e-150); }
// exp(x) overflows above this.
fn _cx_exp_big_f32() -> f32 { return 88.0; }
fn _cx_exp_big_f64() -> f64 { return f64(709.0); }
// tanh(x) rounds to +-1 above this.
fn _cx_tanh_big_f32() -> f32 { return 9.0; }
fn _cx_tanh_big_f64() -> f64 { return f64(22.0); }

// NumPy's product (ac - bd) + (ad + bc)j.
fn cx_mul_{{T}}(a: vec2<{{T}}>, b: vec2<{{T}}>) -> vec2<{{T}}> {
    return vec2<{{T}}>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// NumPy's quotient (Smith's algorithm: the ratio of the smaller to the larger part of b, so no
// intermediate overflows); a zero divisor gives the parts divided by +0.
fn cx_div_{{T}}(a: vec2<{{T}}>, b: vec2<{{T}}>) -> vec2<{{T}}> {
    let abr = abs(b.x);
    let abi = abs(b.y);
    if (abr >= abi) {
        if (abr == {{T}}(0) && abi == {{T}}(0)) {
            return vec2<{{T}}>(_cx_div_zero_{{T}}(a.x), _cx_div_zero_{{T}}(a.y));
        }
        let rat = b.y / b.x;
        let scl = {{T}}(1) / (b.x + b.y * rat);
        return vec2<{{T}}>((a.x + a.y * rat) * scl, (a.y - a.x * rat) * scl);
    }
    let rat = b.x / b.y;
    let scl = {{T}}(1) / (b.y + b.x * rat);
    return vec2<{{T}}>((a.x * rat + a.y) * scl, (a.y * rat - a.x) * scl);
}

// v / +0 (inf with v's sign; NaN for 0 and NaN), spelled out: compilers may fold 0 / 0.
fn _cx_div_zero_{{T}}(v: {{T}}) -> {{T}} {
    return _cx_pick_{{T}}(_cx_copysign_{{T}}(ew_inf_{{T}}(), v), ew_nan_{{T}}(), v == {{T}}(0) || ew_isnan_{{T}}(v));
}

fn cx_neg_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return vec2<{{T}}>(ew_neg_{{T}}(z.x), ew_neg_{{T}}(z.y)); }
fn cx_conj_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return vec2<{{T}}>(z.x, ew_neg_{{T}}(z.y)); }
fn cx_abs_{{T}}(z: vec2<{{T}}>) -> {{T}} { return ew_hypot_{{T}}(z.x, z.y); }
fn cx_isnan_{{T}}(z: vec2<{{T}}>) -> bool { return ew_isnan_{{T}}(z.x) || ew_isnan_{{T}}(z.y); }
// i z (exact).
fn _cx_mul_i_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return vec2<{{T}}>(ew_neg_{{T}}(z.y), z.x); }
// -i z (exact).
fn _cx_mul_mi_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return vec2<{{T}}>(z.y, ew_neg_{{T}}(z.x)); }

// z / |z| (NumPy 2: infinite parts give +-1 or NaN; 0 for 0; NaN parts give NaN).
fn cx_sign_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    if (cx_isnan_{{T}}(z)) { return _cx_nan2_{{T}}(); }
    let ix = ew_isinf_{{T}}(z.x);
    let iy = ew_isinf_{{T}}(z.y);
    if (ix && iy) { return _cx_nan2_{{T}}(); }
    if (ix) { return vec2<{{T}}>(_cx_copysign_{{T}}({{T}}(1), z.x), {{T}}(0)); }
    if (iy) { return vec2<{{T}}>({{T}}(0), _cx_copysign_{{T}}({{T}}(1), z.y)); }
    if (z.x == {{T}}(0) && z.y == {{T}}(0)) { return vec2<{{T}}>({{T}}(0), {{T}}(0)); }
    let m = ew_hypot_{{T}}(z.x, z.y);
    return vec2<{{T}}>(z.x / m, z.y / m);
}

// NumPy's 1 / z (the ratio of the smaller to the larger part; 1 / 0 is NaN + NaN j).
fn cx_reciprocal_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    if (z.x == {{T}}(0) && z.y == {{T}}(0)) { return _cx_nan2_{{T}}(); }
    if (abs(z.y) <= abs(z.x)) {
        let q = z.y / z.x;
        let d = z.x + z.y * q;
        return vec2<{{T}}>({{T}}(1) / d, ew_neg_{{T}}(q / d));
    }
    let q = z.x / z.y;
    let d = z.x * q + z.y;
    return vec2<{{T}}>(q / d, ew_neg_{{T}}({{T}}(1) / d));
}

// log|z| for finite z, without overflow or underflow, accurate near the unit circle.
fn _cx_log_abs_{{T}}(x: {{T}}, y: {{T}}) -> {{T}} {
    let ax = abs(x);
    let ay = abs(y);
    let m = max(ax, ay);
    let n = min(ax, ay);
    if (m == {{T}}(0)) { return ew_neg_{{T}}(ew_inf_{{T}}()); }
    if (m >= {{T}}(0.5) && m <= {{T}}(2)) {
        // log|z|^2 / 2 = log1p((m - 1)(m + 1) + n^2) / 2, with m - 1 exact
        let d = m - {{T}}(1);
        return {{T}}(0.5) * ew_log1p_{{T}}({{T}}(2) * d + (d * d + n * n));
    }
    let q = n / m;
    return ew_log_{{T}}(m) + {{T}}(0.5) * ew_log1p_{{T}}(q * q);
}

fn cx_log_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    if (cx_isnan_{{T}}(z)) {
        if (ew_isinf_{{T}}(z.x) || ew_isinf_{{T}}(z.y)) { return vec2<{{T}}>(ew_inf_{{T}}(), ew_nan_{{T}}()); }
        return _cx_nan2_{{T}}();
    }
    let theta = ew_atan2_{{T}}(z.y, z.x);
    if (ew_isinf_{{T}}(z.x) || ew_isinf_{{T}}(z.y)) { return vec2<{{T}}>(ew_inf_{{T}}(), theta); }
    return vec2<{{T}}>(_cx_log_abs_{{T}}(z.x, z.y), theta);
}

fn cx_log2_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return cx_log_{{T}}(z) * {{T}}(1.44269504088896340736); }
fn cx_log10_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return cx_log_{{T}}(z) * {{T}}(0.43429448190325182765); }

// log(1 + z), accurate for small z.
fn cx_log1p_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    if (abs(x) < {{T}}(0.5) && abs(y) < {{T}}(0.5)) {
        // |1 + z|^2 = 1 + (2x + x^2 + y^2)
        let re = {{T}}(0.5) * ew_log1p_{{T}}(x * ({{T}}(2) + x) + y * y);
        return vec2<{{T}}>(re, ew_atan2_{{T}}(y, {{T}}(1) + x));
    }
    return cx_log_{{T}}(vec2<{{T}}>({{T}}(1) + x, y));
}

fn cx_exp_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    if (ew_isinf_{{T}}(x)) {
        if (x > {{T}}(0)) {
            if (y == {{T}}(0)) { return z; }
            if (!_cx_isfinite_{{T}}(y)) { return vec2<{{T}}>(x, ew_nan_{{T}}()); }
            return vec2<{{T}}>(_cx_inf_mul_{{T}}(x, cos_{{T}}(y)), _cx_inf_mul_{{T}}(x, sin_{{T}}(y)));
        }
        if (!_cx_isfinite_{{T}}(y)) { return vec2<{{T}}>({{T}}(0), {{T}}(0)); }
        return vec2<{{T}}>(_cx_copysign_{{T}}({{T}}(0), cos_{{T}}(y)), _cx_copysign_{{T}}({{T}}(0), sin_{{T}}(y)));
    }
    if (ew_isnan_{{T}}(x)) {
        if (y == {{T}}(0)) { return z; }
        return _cx_nan2_{{T}}();
    }
    if (!_cx_isfinite_{{T}}(y)) { return _cx_nan2_{{T}}(); }
    if (y == {{T}}(0)) { return vec2<{{T}}>(ew_exp_{{T}}(x), y); }
    let c = cos_{{T}}(y);
    let s = sin_{{T}}(y);
    if (x > _cx_exp_big_{{T}}()) {
        // e^x overflows where e^x cos y may not: two halves
        let h = ew_exp_{{T}}({{T}}(0.5) * x);
        return vec2<{{T}}>((h * c) * h, (h * s) * h);
    }
    let e = ew_exp_{{T}}(x);
    return vec2<{{T}}>(e * c, e * s);
}

// exp(z) - 1; the real part as expm1(x) cos y - 2 sin^2(y/2), accurate for small z.
fn cx_expm1_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    if (!_cx_isfinite_{{T}}(x) || !_cx_isfinite_{{T}}(y) || x > {{T}}(1) || x < {{T}}(-1)) {
        let e = cx_exp_{{T}}(z);
        if (ew_isinf_{{T}}(x) && x < {{T}}(0)) {
            return vec2<{{T}}>({{T}}(-1), e.y);
        }
        return vec2<{{T}}>(e.x - {{T}}(1), e.y);
    }
    if (y == {{T}}(0)) {
        if (x == {{T}}(0)) { return vec2<{{T}}>({{T}}(0), y); }  // the spec's expm1(-0 + 0j) = +0 + 0j
        return vec2<{{T}}>(ew_expm1_{{T}}(x), y);
    }
    let h = sin_{{T}}({{T}}(0.5) * y);
    let re = ew_expm1_{{T}}(x) * cos_{{T}}(y) - {{T}}(2) * h * h;
    return vec2<{{T}}>(re, ew_exp_{{T}}(x) * sin_{{T}}(y));
}

// The principal square root: t = sqrt((|x| + |z|) / 2), then y / 2t; scaled where |z| could
// overflow or lose bits to underflow.
fn cx_sqrt_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    if (ew_isinf_{{T}}(y)) { return vec2<{{T}}>(ew_inf_{{T}}(), y); }
    if (ew_isnan_{{T}}(x)) { return _cx_nan2_{{T}}(); }
    if (ew_isinf_{{T}}(x)) {
        if (x > {{T}}(0)) {
            if (ew_isnan_{{T}}(y)) { return vec2<{{T}}>(x, y); }
            return vec2<{{T}}>(x, _cx_copysign_{{T}}({{T}}(0), y));
        }
        if (ew_isnan_{{T}}(y)) { return vec2<{{T}}>(ew_nan_{{T}}(), ew_inf_{{T}}()); }
        return vec2<{{T}}>({{T}}(0), _cx_copysign_{{T}}(ew_inf_{{T}}(), y));
    }
    if (ew_isnan_{{T}}(y)) { return _cx_nan2_{{T}}(); }
    if (x == {{T}}(0) && y == {{T}}(0)) { return vec2<{{T}}>({{T}}(0), y); }
    let m = max(abs(x), abs(y));
    var a = x;
    var b = y;
    var k = {{T}}(1);
    if (m > {{T}}(1) / _cx_tiny_{{T}}()) {
        a = x * {{T}}(0.25);
        b = y * {{T}}(0.25);
        k = {{T}}(2);
    } else if (m < _cx_tiny_{{T}}()) {
        let s = {{T}}(1) / _cx_tiny_{{T}}();
        a = x * s * s;
        b = y * s * s;
        k = _cx_tiny_{{T}}();
    }
    let t = sqrt({{T}}(0.5) * (abs(a) + ew_hypot_{{T}}(a, b)));
    if (a >= {{T}}(0)) {
        return vec2<{{T}}>(k * t, k * (b / ({{T}}(2) * t)));
    }
    return vec2<{{T}}>(k * (abs(b) / ({{T}}(2) * t)), k * _cx_copysign_{{T}}(t, b));
}

fn cx_square_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return cx_mul_{{T}}(z, z); }

// NumPy's power: z^0 = 1; 0^w = 0 for Re w > 0, else NaN; small integer real exponents by
// repeated squaring (negative ones through the reciprocal); else exp(w log z).
fn cx_pow_{{T}}(a: vec2<{{T}}>, b: vec2<{{T}}>) -> vec2<{{T}}> {
    if (b.x == {{T}}(0) && b.y == {{T}}(0)) { return vec2<{{T}}>({{T}}(1), {{T}}(0)); }
    if (a.x == {{T}}(0) && a.y == {{T}}(0)) {
        if (b.x > {{T}}(0)) { return vec2<{{T}}>({{T}}(0), {{T}}(0)); }
        return _cx_nan2_{{T}}();
    }
    if (b.y == {{T}}(0) && floor(b.x) == b.x && abs(b.x) < {{T}}(100)) {
        var n = u32(abs(b.x));
        var p = a;
        var acc = vec2<{{T}}>({{T}}(1), {{T}}(0));
        if (n == 1u) { acc = a; n = 0u; }
        loop {
            if (n == 0u) { break; }
            if ((n & 1u) != 0u) { acc = cx_mul_{{T}}(acc, p); }
            n = n >> 1u;
            if (n == 0u) { break; }
            p = cx_mul_{{T}}(p, p);
        }
        if (b.x < {{T}}(0)) { return cx_div_{{T}}(vec2<{{T}}>({{T}}(1), {{T}}(0)), acc); }
        return acc;
    }
    return cx_exp_{{T}}(cx_mul_{{T}}(b, cx_log_{{T}}(a)));
}

// sinh x cos y + i cosh x sin y, with C99's special values.
fn cx_sinh_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    if (_cx_isfinite_{{T}}(x) && _cx_isfinite_{{T}}(y)) {
        if (abs(x) > {{T}}(20)) {
            // sinh x = cosh x = e^|x| / 2 to the last bit; two halves, as e^|x| overflows where
            // the products may not
            let h = ew_exp_{{T}}({{T}}(0.5) * abs(x));
            let re = {{T}}(0.5) * (h * cos_{{T}}(y)) * h;
            var im = {{T}}(0.5) * (h * sin_{{T}}(y)) * h;
            if (y == {{T}}(0)) { im = y; }
            return vec2<{{T}}>(_cx_negif_{{T}}(re, ew_signbit_{{T}}(x)), im);
        }
        if (y == {{T}}(0)) { return vec2<{{T}}>(ew_sinh_{{T}}(x), y); }
        return vec2<{{T}}>(ew_sinh_{{T}}(x) * cos_{{T}}(y), ew_cosh_{{T}}(x) * sin_{{T}}(y));
    }
    if (x == {{T}}(0)) { return vec2<{{T}}>(x, ew_nan_{{T}}()); }
    if (ew_isinf_{{T}}(x)) {
        if (y == {{T}}(0)) { return z; }
        if (_cx_isfinite_{{T}}(y)) { return vec2<{{T}}>(_cx_inf_mul_{{T}}(x, cos_{{T}}(y)), _cx_inf_mul_{{T}}(ew_inf_{{T}}(), sin_{{T}}(y))); }
        return vec2<{{T}}>(x, ew_nan_{{T}}());
    }
    if (ew_isnan_{{T}}(x) && y == {{T}}(0)) { return z; }
    return _cx_nan2_{{T}}();
}

// cosh x cos y + i sinh x sin y, with C99's special values.
fn cx_cosh_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    if (_cx_isfinite_{{T}}(x) && _cx_isfinite_{{T}}(y)) {
        if (abs(x) > {{T}}(20)) {
            let h = ew_exp_{{T}}({{T}}(0.5) * abs(x));
            var im = {{T}}(0.5) * (h * sin_{{T}}(y)) * h;
            if (y == {{T}}(0)) { im = y; }
            return vec2<{{T}}>({{T}}(0.5) * (h * cos_{{T}}(y)) * h, _cx_negif_{{T}}(im, ew_signbit_{{T}}(x)));
        }
        if (y == {{T}}(0)) { return vec2<{{T}}>(ew_cosh_{{T}}(x), _cx_negif_{{T}}(y, ew_signbit_{{T}}(x))); }
        return vec2<{{T}}>(ew_cosh_{{T}}(x) * cos_{{T}}(y), ew_sinh_{{T}}(x) * sin_{{T}}(y));
    }
    if (x == {{T}}(0)) { return vec2<{{T}}>(ew_nan_{{T}}(), {{T}}(0)); }
    if (ew_isinf_{{T}}(x)) {
        if (y == {{T}}(0)) { return vec2<{{T}}>(ew_inf_{{T}}(), _cx_negif_{{T}}(y, ew_signbit_{{T}}(x))); }
        if (_cx_isfinite_{{T}}(y)) { return vec2<{{T}}>(_cx_inf_mul_{{T}}(ew_inf_{{T}}(), cos_{{T}}(y)), _cx_inf_mul_{{T}}(x, sin_{{T}}(y))); }
        return vec2<{{T}}>(ew_inf_{{T}}(), ew_nan_{{T}}());
    }
    if (ew_isnan_{{T}}(x) && y == {{T}}(0)) { return z; }
    return _cx_nan2_{{T}}();
}

// Kahan's formula: t = tan y, s = sinh x, (beta rho s + i t) / (1 + beta s^2) with
// beta = 1 + t^2, rho = sqrt(1 + s^2); +-1 + tiny imaginary part for large |x|.
fn cx_tanh_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    if (ew_isnan_{{T}}(x)) {
        if (y == {{T}}(0)) { return z; }
        return _cx_nan2_{{T}}();
    }
    if (ew_isinf_{{T}}(x)) {
        // the spec's 1 + 0j for finite y > 0 (C99's sign of sin(2y) differs), conjugate below
        return vec2<{{T}}>(_cx_copysign_{{T}}({{T}}(1), x), _cx_copysign_{{T}}({{T}}(0), y));
    }
    if (!_cx_isfinite_{{T}}(y)) {
        if (x == {{T}}(0)) { return vec2<{{T}}>(x, ew_nan_{{T}}()); }
        return _cx_nan2_{{T}}();
    }
    if (abs(x) >= _cx_tanh_big_{{T}}()) {
        let e = ew_exp_{{T}}(ew_neg_{{T}}(abs(x)));
        return vec2<{{T}}>(_cx_copysign_{{T}}({{T}}(1), x), {{T}}(4) * sin_{{T}}(y) * cos_{{T}}(y) * e * e);
    }
    if (y == {{T}}(0)) { return vec2<{{T}}>(ew_tanh_{{T}}(x), y); }
    let t = tan_{{T}}(y);
    let beta = {{T}}(1) + t * t;
    let s = ew_sinh_{{T}}(x);
    let rho = sqrt({{T}}(1) + s * s);
    let den = {{T}}(1) + beta * s * s;
    return vec2<{{T}}>((beta * rho * s) / den, t / den);
}

fn cx_sin_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return _cx_mul_mi_{{T}}(cx_sinh_{{T}}(_cx_mul_i_{{T}}(z))); }
fn cx_cos_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return cx_cosh_{{T}}(_cx_mul_i_{{T}}(z)); }
fn cx_tan_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return _cx_mul_mi_{{T}}(cx_tanh_{{T}}(_cx_mul_i_{{T}}(z))); }

// For finite x, y >= 0: (asin real part, acos real part, the common imaginary magnitude
// log(A + sqrt(A^2 - 1))), A = (|z + 1| + |z - 1|) / 2 (Hull et al.).
fn _cx_asin_parts_{{T}}(x: {{T}}, y: {{T}}) -> vec3<{{T}}> {
    let half_pi = {{T}}(1.57079632679489661923);
    if (max(x, y) > _cx_big_{{T}}()) {
        // asin z ~ -i log(2iz): real atan2(x, y), imaginary log|z| + log 2
        let im = _cx_log_abs_{{T}}(x, y) + {{T}}(0.69314718055994530942);
        return vec3<{{T}}>(ew_atan2_{{T}}(x, y), ew_atan2_{{T}}(y, x), im);
    }
    if (y == {{T}}(0)) {
        if (x <= {{T}}(1)) { return vec3<{{T}}>(asin_{{T}}(x), acos_{{T}}(x), {{T}}(0)); }
        return vec3<{{T}}>(half_pi, {{T}}(0), ew_acosh_{{T}}(x));
    }
    let xp1 = x + {{T}}(1);
    let xm1 = x - {{T}}(1);
    let r = ew_hypot_{{T}}(xp1, y);
    let s = ew_hypot_{{T}}(xm1, y);
    let a = {{T}}(0.5) * (r + s);
    let b = x / a;
    let y2 = y * y;
    var re_s: {{T}};
    var re_c: {{T}};
    if (b <= {{T}}(0.6417)) {
        re_s = asin_{{T}}(b);
        re_c = acos_{{T}}(b);
    } else if (x <= {{T}}(1)) {
        let d = {{T}}(0.5) * (a + x) * (y2 / (r + xp1) + (s - xm1));
        re_s = atan_{{T}}(x / sqrt(d));
        re_c = atan_{{T}}(sqrt(d) / x);
    } else {
        let apx = a + x;
        let d = {{T}}(0.5) * (apx / (r + xp1) + apx / (s + xm1));
        re_s = atan_{{T}}(x / (y * sqrt(d)));
        re_c = atan_{{T}}((y * sqrt(d)) / x);
    }
    var im: {{T}};
    if (a <= {{T}}(1.5)) {
        var am1: {{T}};
        if (x < {{T}}(1)) {
            // A - 1 = y^2 c, c = (1 / (r + x + 1) + 1 / (s + 1 - x)) / 2: y factored out, so
            // tiny y does not underflow
            let c = {{T}}(0.5) * ({{T}}(1) / (r + xp1) + {{T}}(1) / (s - xm1));
            am1 = y2 * c;
            im = ew_log1p_{{T}}(am1 + y * sqrt(c * (a + {{T}}(1))));
        } else {
            am1 = {{T}}(0.5) * (y2 / (r + xp1) + (s + xm1));
            im = ew_log1p_{{T}}(am1 + sqrt(am1 * (a + {{T}}(1))));
        }
    } else {
        im = ew_log_{{T}}(a + sqrt(a * a - {{T}}(1)));
    }
    return vec3<{{T}}>(re_s, re_c, im);
}

// asinh z = -i asin(iz); odd and conjugate-symmetric; C99's special values.
fn cx_asinh_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    let ax = abs(x);
    let ay = abs(y);
    if (ew_isnan_{{T}}(x)) {
        if (y == {{T}}(0)) { return z; }
        if (ew_isinf_{{T}}(y)) { return vec2<{{T}}>(ew_inf_{{T}}(), ew_nan_{{T}}()); }
        return _cx_nan2_{{T}}();
    }
    if (ew_isnan_{{T}}(y)) {
        if (ew_isinf_{{T}}(x)) { return vec2<{{T}}>(x, y); }
        return _cx_nan2_{{T}}();
    }
    var re: {{T}};
    var im: {{T}};
    if (ew_isinf_{{T}}(x) || ew_isinf_{{T}}(y)) {
        re = ew_inf_{{T}}();
        if (!ew_isinf_{{T}}(y)) {
            im = {{T}}(0);
        } else if (ew_isinf_{{T}}(x)) {
            im = {{T}}(0.78539816339744830962);
        } else {
            im = {{T}}(1.57079632679489661923);
        }
    } else {
        // asin(|y| + i|x|) = (R, I)  ->  asinh(|x| + i|y|) = (I, R)
        let p = _cx_asin_parts_{{T}}(ay, ax);
        re = p.z;
        im = p.x;
    }
    return vec2<{{T}}>(_cx_copysign_{{T}}(re, x), _cx_copysign_{{T}}(im, y));
}

fn cx_asin_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return _cx_mul_mi_{{T}}(cx_asinh_{{T}}(_cx_mul_i_{{T}}(z))); }

// acos(conj z) = conj(acos z); real part in [0, pi]; C99's special values.
fn cx_acos_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    let pi = _cx_pi_{{T}}();
    let minus_inf = _cx_negif_{{T}}(ew_inf_{{T}}(), !ew_signbit_{{T}}(y));
    if (ew_isnan_{{T}}(x)) {
        if (ew_isinf_{{T}}(y)) { return vec2<{{T}}>(x, minus_inf); }
        return _cx_nan2_{{T}}();
    }
    if (ew_isnan_{{T}}(y)) {
        if (x == {{T}}(0)) { return vec2<{{T}}>({{T}}(1.57079632679489661923), y); }
        if (ew_isinf_{{T}}(x)) { return vec2<{{T}}>(y, ew_inf_{{T}}()); }
        return _cx_nan2_{{T}}();
    }
    if (ew_isinf_{{T}}(x)) {
        var re = select({{T}}(0), pi, x < {{T}}(0));
        if (ew_isinf_{{T}}(y)) { re = select({{T}}(0.78539816339744830962), {{T}}(2.35619449019234492885), x < {{T}}(0)); }
        return vec2<{{T}}>(re, minus_inf);
    }
    if (ew_isinf_{{T}}(y)) { return vec2<{{T}}>({{T}}(1.57079632679489661923), minus_inf); }
    let p = _cx_asin_parts_{{T}}(abs(x), abs(y));
    let re = select(p.y, pi - p.y, ew_signbit_{{T}}(x));
    return vec2<{{T}}>(re, _cx_negif_{{T}}(p.z, !ew_signbit_{{T}}(y)));
}

// acosh z = +-i acos z, real part >= 0, imaginary part with the sign of y.
fn cx_acosh_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let w = cx_acos_{{T}}(z);
    if (ew_isnan_{{T}}(w.x) && ew_isnan_{{T}}(w.y)) { return w; }
    if (ew_isnan_{{T}}(w.x)) { return vec2<{{T}}>(abs(w.y), w.x); }
    if (ew_isnan_{{T}}(w.y)) { return vec2<{{T}}>(w.y, w.x); }
    return vec2<{{T}}>(abs(w.y), _cx_copysign_{{T}}(w.x, z.y));
}

// atanh z = log((1 + z) / (1 - z)) / 2: real part log1p(4x / ((1 - x)^2 + y^2)) / 4 (a
// difference of logarithms where that denominator underflows), imaginary part
// atan2(2y, (1 - x)(1 + x) - y^2) / 2; odd and conjugate-symmetric; C99's special values.
fn cx_atanh_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> {
    let x = z.x;
    let y = z.y;
    let ax = abs(x);
    let ay = abs(y);
    let half_pi = {{T}}(1.57079632679489661923);
    if (ew_isnan_{{T}}(x)) {
        if (ew_isinf_{{T}}(y)) { return vec2<{{T}}>(_cx_copysign_{{T}}({{T}}(0), x), _cx_copysign_{{T}}(half_pi, y)); }
        return _cx_nan2_{{T}}();
    }
    if (ew_isnan_{{T}}(y)) {
        if (ew_isinf_{{T}}(x) || x == {{T}}(0)) { return vec2<{{T}}>(_cx_copysign_{{T}}({{T}}(0), x), y); }
        return _cx_nan2_{{T}}();
    }
    var re: {{T}};
    var im: {{T}};
    if (max(ax, ay) > _cx_big_{{T}}()) {
        // real part x / |z|^2 (scaled), imaginary part pi/2
        if (ew_isinf_{{T}}(ax) || ew_isinf_{{T}}(ay)) {
            re = {{T}}(0);
        } else {
            let m = max(ax, ay);
            let u = ax / m;
            let v = ay / m;
            re = (u / (u * u + v * v)) / m;
        }
        im = half_pi;
    } else {
        let d = ({{T}}(1) - ax) * ({{T}}(1) - ax) + ay * ay;
        if (d < _cx_tiny_{{T}}()) {
            re = {{T}}(0.5) * (_cx_log_abs_{{T}}({{T}}(1) + ax, ay) - _cx_log_abs_{{T}}({{T}}(1) - ax, ay));
        } else {
            re = {{T}}(0.25) * ew_log1p_{{T}}({{T}}(4) * ax / d);
        }
        im = {{T}}(0.5) * ew_atan2_{{T}}({{T}}(2) * ay, ({{T}}(1) - ax) * ({{T}}(1) + ax) - ay * ay);
    }
    return vec2<{{T}}>(_cx_copysign_{{T}}(re, x), _cx_copysign_{{T}}(im, y));
}

fn cx_atan_{{T}}(z: vec2<{{T}}>) -> vec2<{{T}}> { return _cx_mul_mi_{{T}}(cx_atanh_{{T}}(_cx_mul_i_{{T}}(z))); }
