// Complex helpers of the elementwise op table (_backend/elementwise_ops.py): a complex value is
// a vec2 of its parts' float type (.x real, .y imaginary), stored interleaved as NumPy stores
// complex64/complex128. Each function follows a marker `// @fn NAME TYPES` (see
// ewise_helpers.wgsl): TT is the parts' type (f32 or f64), the function is named NAME_<type>.
//
// Semantics: NumPy's values (multiplication, Smith's division and the small-integer powers as
// NumPy computes them) and the Array API's special cases (C99 Annex G) for exp, expm1, log,
// log1p, sqrt, the trigonometric and hyperbolic functions and their inverses. Sign flips go
// through ew_neg (compilers that turn -x into 0 - x lose the sign of zero); real functions come
// from f32math/f64math, so results are accurate on every adapter. The inverse functions follow
// Hull, Fairgrieve and Tang (ACM TOMS 23, 1997): no overflow or cancellation for huge, tiny or
// near-branch-point arguments.

// @fn _cx_pi f32 f64
fn _cx_pi_TT() -> TT { return TT(3.14159265358979323846); }
// @fn _cx_nan2 f32 f64
fn _cx_nan2_TT() -> vec2<TT> { return vec2<TT>(ew_nan_TT(), ew_nan_TT()); }
// @fn _cx_bits f32
// The parts' bits as one unsigned type, and back. Special values (infinities, the sign of zero)
// are built and chosen on these bits: Vulkan drivers may compile float arithmetic, selects and
// comparisons assuming no infinities, NaNs or signed zeros (NVIDIA does), so `inf * v`,
// `select(v, -v, c)` or `abs(x) < inf` lose exactly the values these functions exist to get right.
fn _cx_bits_f32(x: f32) -> u32 { return bitcast<u32>(x); }
// @fn _cx_bits f64
fn _cx_bits_f64(x: f64) -> u64 { return bitcast<u64>(x); }
// @fn _cx_float f32
fn _cx_float_f32(b: u32) -> f32 { return bitcast<f32>(b); }
// @fn _cx_float f64
fn _cx_float_f64(b: u64) -> f64 { return bitcast<f64>(b); }
// @fn _cx_sign_mask f32
fn _cx_sign_mask_f32() -> u32 { return 0x80000000u; }
// @fn _cx_sign_mask f64
fn _cx_sign_mask_f64() -> u64 { return u64(1) << 63u; }
// @fn _cx_isfinite f32
fn _cx_isfinite_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
// @fn _cx_isfinite f64
fn _cx_isfinite_f64(x: f64) -> bool {
    let e = u64(0x7ff00000u) << 32u;
    return (bitcast<u64>(x) & e) != e;
}
// @fn _cx_copysign f32 f64
// |a| with the sign bit of b.
fn _cx_copysign_TT(a: TT, b: TT) -> TT {
    return _cx_negif_TT(abs(a), ew_signbit_TT(b));
}
// @fn _cx_negif f32 f64
// -v where c holds, v otherwise (a flip of the sign bit).
fn _cx_negif_TT(v: TT, c: bool) -> TT {
    let b = _cx_bits_TT(v);
    return _cx_float_TT(select(b, b ^ _cx_sign_mask_TT(), c));
}
// @fn _cx_pick f32 f64
// select(f, t, c) on the bits.
fn _cx_pick_TT(f: TT, t: TT, c: bool) -> TT {
    return _cx_float_TT(select(_cx_bits_TT(f), _cx_bits_TT(t), c));
}
// @fn _cx_inf_mul f32 f64
// An infinity with s's sign times v, as IEEE multiplies: NaN for a zero or NaN v, else an
// infinity with the product's sign.
fn _cx_inf_mul_TT(s: TT, v: TT) -> TT {
    let inf = _cx_bits_TT(ew_inf_TT());
    let sign = (_cx_bits_TT(s) ^ _cx_bits_TT(v)) & _cx_sign_mask_TT();
    return _cx_pick_TT(_cx_float_TT(inf | sign), ew_nan_TT(), v == TT(0) || ew_isnan_TT(v));
}
// @fn _cx_big f32
// Above this |z| the inverse functions use their asymptotic forms (exact to the last bit).
fn _cx_big_f32() -> f32 { return 1.0e10; }
// @fn _cx_big f64
fn _cx_big_f64() -> f64 { return f64(1.0e20); }
// @fn _cx_tiny f32
// Below this, squares lose bits to underflow.
fn _cx_tiny_f32() -> f32 { return 1.0e-18; }
// @fn _cx_tiny f64
fn _cx_tiny_f64() -> f64 { return f64(1.0e-150); }
// @fn _cx_exp_big f32
// exp(x) overflows above this.
fn _cx_exp_big_f32() -> f32 { return 88.0; }
// @fn _cx_exp_big f64
fn _cx_exp_big_f64() -> f64 { return f64(709.0); }
// @fn _cx_tanh_big f32
// tanh(x) rounds to +-1 above this.
fn _cx_tanh_big_f32() -> f32 { return 9.0; }
// @fn _cx_tanh_big f64
fn _cx_tanh_big_f64() -> f64 { return f64(22.0); }

// @fn cx_mul f32 f64
// NumPy's product (ac - bd) + (ad + bc)j.
fn cx_mul_TT(a: vec2<TT>, b: vec2<TT>) -> vec2<TT> {
    return vec2<TT>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// @fn cx_div f32 f64
// NumPy's quotient (Smith's algorithm: the ratio of the smaller to the larger part of b, so no
// intermediate overflows); a zero divisor gives the parts divided by +0.
fn cx_div_TT(a: vec2<TT>, b: vec2<TT>) -> vec2<TT> {
    let abr = abs(b.x);
    let abi = abs(b.y);
    if (abr >= abi) {
        if (abr == TT(0) && abi == TT(0)) {
            return vec2<TT>(_cx_div_zero_TT(a.x), _cx_div_zero_TT(a.y));
        }
        let rat = b.y / b.x;
        let scl = TT(1) / (b.x + b.y * rat);
        return vec2<TT>((a.x + a.y * rat) * scl, (a.y - a.x * rat) * scl);
    }
    let rat = b.x / b.y;
    let scl = TT(1) / (b.y + b.x * rat);
    return vec2<TT>((a.x * rat + a.y) * scl, (a.y * rat - a.x) * scl);
}

// @fn _cx_div_zero f32 f64
// v / +0 (inf with v's sign; NaN for 0 and NaN), spelled out: compilers may fold 0 / 0.
fn _cx_div_zero_TT(v: TT) -> TT {
    return _cx_pick_TT(_cx_copysign_TT(ew_inf_TT(), v), ew_nan_TT(), v == TT(0) || ew_isnan_TT(v));
}

// @fn cx_neg f32 f64
fn cx_neg_TT(z: vec2<TT>) -> vec2<TT> { return vec2<TT>(ew_neg_TT(z.x), ew_neg_TT(z.y)); }
// @fn cx_conj f32 f64
fn cx_conj_TT(z: vec2<TT>) -> vec2<TT> { return vec2<TT>(z.x, ew_neg_TT(z.y)); }
// @fn cx_abs f32 f64
fn cx_abs_TT(z: vec2<TT>) -> TT { return ew_hypot_TT(z.x, z.y); }
// @fn cx_isnan f32 f64
fn cx_isnan_TT(z: vec2<TT>) -> bool { return ew_isnan_TT(z.x) || ew_isnan_TT(z.y); }
// @fn _cx_mul_i f32 f64
// i z (exact).
fn _cx_mul_i_TT(z: vec2<TT>) -> vec2<TT> { return vec2<TT>(ew_neg_TT(z.y), z.x); }
// @fn _cx_mul_mi f32 f64
// -i z (exact).
fn _cx_mul_mi_TT(z: vec2<TT>) -> vec2<TT> { return vec2<TT>(z.y, ew_neg_TT(z.x)); }

// @fn cx_sign f32 f64
// z / |z| (NumPy 2: infinite parts give +-1 or NaN; 0 for 0; NaN parts give NaN).
fn cx_sign_TT(z: vec2<TT>) -> vec2<TT> {
    if (cx_isnan_TT(z)) { return _cx_nan2_TT(); }
    let ix = ew_isinf_TT(z.x);
    let iy = ew_isinf_TT(z.y);
    if (ix && iy) { return _cx_nan2_TT(); }
    if (ix) { return vec2<TT>(_cx_copysign_TT(TT(1), z.x), TT(0)); }
    if (iy) { return vec2<TT>(TT(0), _cx_copysign_TT(TT(1), z.y)); }
    if (z.x == TT(0) && z.y == TT(0)) { return vec2<TT>(TT(0), TT(0)); }
    let m = ew_hypot_TT(z.x, z.y);
    return vec2<TT>(z.x / m, z.y / m);
}

// @fn cx_reciprocal f32 f64
// NumPy's 1 / z (the ratio of the smaller to the larger part; 1 / 0 is NaN + NaN j).
fn cx_reciprocal_TT(z: vec2<TT>) -> vec2<TT> {
    if (z.x == TT(0) && z.y == TT(0)) { return _cx_nan2_TT(); }
    if (abs(z.y) <= abs(z.x)) {
        let q = z.y / z.x;
        let d = z.x + z.y * q;
        return vec2<TT>(TT(1) / d, ew_neg_TT(q / d));
    }
    let q = z.x / z.y;
    let d = z.x * q + z.y;
    return vec2<TT>(q / d, ew_neg_TT(TT(1) / d));
}

// @fn _cx_log_abs f32 f64
// log|z| for finite z, without overflow or underflow, accurate near the unit circle.
fn _cx_log_abs_TT(x: TT, y: TT) -> TT {
    let ax = abs(x);
    let ay = abs(y);
    let m = max(ax, ay);
    let n = min(ax, ay);
    if (m == TT(0)) { return ew_neg_TT(ew_inf_TT()); }
    if (m >= TT(0.5) && m <= TT(2)) {
        // log|z|^2 / 2 = log1p((m - 1)(m + 1) + n^2) / 2, with m - 1 exact
        let d = m - TT(1);
        return TT(0.5) * ew_log1p_TT(TT(2) * d + (d * d + n * n));
    }
    let q = n / m;
    return ew_log_TT(m) + TT(0.5) * ew_log1p_TT(q * q);
}

// @fn cx_log f32 f64
fn cx_log_TT(z: vec2<TT>) -> vec2<TT> {
    if (cx_isnan_TT(z)) {
        if (ew_isinf_TT(z.x) || ew_isinf_TT(z.y)) { return vec2<TT>(ew_inf_TT(), ew_nan_TT()); }
        return _cx_nan2_TT();
    }
    let theta = ew_atan2_TT(z.y, z.x);
    if (ew_isinf_TT(z.x) || ew_isinf_TT(z.y)) { return vec2<TT>(ew_inf_TT(), theta); }
    return vec2<TT>(_cx_log_abs_TT(z.x, z.y), theta);
}

// @fn cx_log2 f32 f64
fn cx_log2_TT(z: vec2<TT>) -> vec2<TT> { return cx_log_TT(z) * TT(1.44269504088896340736); }
// @fn cx_log10 f32 f64
fn cx_log10_TT(z: vec2<TT>) -> vec2<TT> { return cx_log_TT(z) * TT(0.43429448190325182765); }

// @fn cx_log1p f32 f64
// log(1 + z), accurate for small z.
fn cx_log1p_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    if (abs(x) < TT(0.5) && abs(y) < TT(0.5)) {
        // |1 + z|^2 = 1 + (2x + x^2 + y^2)
        let re = TT(0.5) * ew_log1p_TT(x * (TT(2) + x) + y * y);
        return vec2<TT>(re, ew_atan2_TT(y, TT(1) + x));
    }
    return cx_log_TT(vec2<TT>(TT(1) + x, y));
}

// @fn cx_exp f32 f64
fn cx_exp_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    if (ew_isinf_TT(x)) {
        if (x > TT(0)) {
            if (y == TT(0)) { return z; }
            if (!_cx_isfinite_TT(y)) { return vec2<TT>(x, ew_nan_TT()); }
            return vec2<TT>(_cx_inf_mul_TT(x, cos_TT(y)), _cx_inf_mul_TT(x, sin_TT(y)));
        }
        if (!_cx_isfinite_TT(y)) { return vec2<TT>(TT(0), TT(0)); }
        return vec2<TT>(_cx_copysign_TT(TT(0), cos_TT(y)), _cx_copysign_TT(TT(0), sin_TT(y)));
    }
    if (ew_isnan_TT(x)) {
        if (y == TT(0)) { return z; }
        return _cx_nan2_TT();
    }
    if (!_cx_isfinite_TT(y)) { return _cx_nan2_TT(); }
    if (y == TT(0)) { return vec2<TT>(ew_exp_TT(x), y); }
    let c = cos_TT(y);
    let s = sin_TT(y);
    if (x > _cx_exp_big_TT()) {
        // e^x overflows where e^x cos y may not: two halves
        let h = ew_exp_TT(TT(0.5) * x);
        return vec2<TT>((h * c) * h, (h * s) * h);
    }
    let e = ew_exp_TT(x);
    return vec2<TT>(e * c, e * s);
}

// @fn cx_expm1 f32 f64
// exp(z) - 1; the real part as expm1(x) cos y - 2 sin^2(y/2), accurate for small z.
fn cx_expm1_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    if (!_cx_isfinite_TT(x) || !_cx_isfinite_TT(y) || x > TT(1) || x < TT(-1)) {
        let e = cx_exp_TT(z);
        if (ew_isinf_TT(x) && x < TT(0)) {
            return vec2<TT>(TT(-1), e.y);
        }
        return vec2<TT>(e.x - TT(1), e.y);
    }
    if (y == TT(0)) {
        if (x == TT(0)) { return vec2<TT>(TT(0), y); }  // the spec's expm1(-0 + 0j) = +0 + 0j
        return vec2<TT>(ew_expm1_TT(x), y);
    }
    let h = sin_TT(TT(0.5) * y);
    let re = ew_expm1_TT(x) * cos_TT(y) - TT(2) * h * h;
    return vec2<TT>(re, ew_exp_TT(x) * sin_TT(y));
}

// @fn cx_sqrt f32 f64
// The principal square root: t = sqrt((|x| + |z|) / 2), then y / 2t; scaled where |z| could
// overflow or lose bits to underflow.
fn cx_sqrt_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    if (ew_isinf_TT(y)) { return vec2<TT>(ew_inf_TT(), y); }
    if (ew_isnan_TT(x)) { return _cx_nan2_TT(); }
    if (ew_isinf_TT(x)) {
        if (x > TT(0)) {
            if (ew_isnan_TT(y)) { return vec2<TT>(x, y); }
            return vec2<TT>(x, _cx_copysign_TT(TT(0), y));
        }
        if (ew_isnan_TT(y)) { return vec2<TT>(ew_nan_TT(), ew_inf_TT()); }
        return vec2<TT>(TT(0), _cx_copysign_TT(ew_inf_TT(), y));
    }
    if (ew_isnan_TT(y)) { return _cx_nan2_TT(); }
    if (x == TT(0) && y == TT(0)) { return vec2<TT>(TT(0), y); }
    let m = max(abs(x), abs(y));
    var a = x;
    var b = y;
    var k = TT(1);
    if (m > TT(1) / _cx_tiny_TT()) {
        a = x * TT(0.25);
        b = y * TT(0.25);
        k = TT(2);
    } else if (m < _cx_tiny_TT()) {
        let s = TT(1) / _cx_tiny_TT();
        a = x * s * s;
        b = y * s * s;
        k = _cx_tiny_TT();
    }
    let t = sqrt(TT(0.5) * (abs(a) + ew_hypot_TT(a, b)));
    if (a >= TT(0)) {
        return vec2<TT>(k * t, k * (b / (TT(2) * t)));
    }
    return vec2<TT>(k * (abs(b) / (TT(2) * t)), k * _cx_copysign_TT(t, b));
}

// @fn cx_square f32 f64
fn cx_square_TT(z: vec2<TT>) -> vec2<TT> { return cx_mul_TT(z, z); }

// @fn cx_pow f32 f64
// NumPy's power: z^0 = 1; 0^w = 0 for Re w > 0, else NaN; small integer real exponents by
// repeated squaring (negative ones through the reciprocal); else exp(w log z).
fn cx_pow_TT(a: vec2<TT>, b: vec2<TT>) -> vec2<TT> {
    if (b.x == TT(0) && b.y == TT(0)) { return vec2<TT>(TT(1), TT(0)); }
    if (a.x == TT(0) && a.y == TT(0)) {
        if (b.x > TT(0)) { return vec2<TT>(TT(0), TT(0)); }
        return _cx_nan2_TT();
    }
    if (b.y == TT(0) && floor(b.x) == b.x && abs(b.x) < TT(100)) {
        var n = u32(abs(b.x));
        var p = a;
        var acc = vec2<TT>(TT(1), TT(0));
        if (n == 1u) { acc = a; n = 0u; }
        loop {
            if (n == 0u) { break; }
            if ((n & 1u) != 0u) { acc = cx_mul_TT(acc, p); }
            n = n >> 1u;
            if (n == 0u) { break; }
            p = cx_mul_TT(p, p);
        }
        if (b.x < TT(0)) { return cx_div_TT(vec2<TT>(TT(1), TT(0)), acc); }
        return acc;
    }
    return cx_exp_TT(cx_mul_TT(b, cx_log_TT(a)));
}

// @fn cx_sinh f32 f64
// sinh x cos y + i cosh x sin y, with C99's special values.
fn cx_sinh_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    if (_cx_isfinite_TT(x) && _cx_isfinite_TT(y)) {
        if (abs(x) > TT(20)) {
            // sinh x = cosh x = e^|x| / 2 to the last bit; two halves, as e^|x| overflows where
            // the products may not
            let h = ew_exp_TT(TT(0.5) * abs(x));
            let re = TT(0.5) * (h * cos_TT(y)) * h;
            var im = TT(0.5) * (h * sin_TT(y)) * h;
            if (y == TT(0)) { im = y; }
            return vec2<TT>(_cx_negif_TT(re, ew_signbit_TT(x)), im);
        }
        if (y == TT(0)) { return vec2<TT>(ew_sinh_TT(x), y); }
        return vec2<TT>(ew_sinh_TT(x) * cos_TT(y), ew_cosh_TT(x) * sin_TT(y));
    }
    if (x == TT(0)) { return vec2<TT>(x, ew_nan_TT()); }
    if (ew_isinf_TT(x)) {
        if (y == TT(0)) { return z; }
        if (_cx_isfinite_TT(y)) { return vec2<TT>(_cx_inf_mul_TT(x, cos_TT(y)), _cx_inf_mul_TT(ew_inf_TT(), sin_TT(y))); }
        return vec2<TT>(x, ew_nan_TT());
    }
    if (ew_isnan_TT(x) && y == TT(0)) { return z; }
    return _cx_nan2_TT();
}

// @fn cx_cosh f32 f64
// cosh x cos y + i sinh x sin y, with C99's special values.
fn cx_cosh_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    if (_cx_isfinite_TT(x) && _cx_isfinite_TT(y)) {
        if (abs(x) > TT(20)) {
            let h = ew_exp_TT(TT(0.5) * abs(x));
            var im = TT(0.5) * (h * sin_TT(y)) * h;
            if (y == TT(0)) { im = y; }
            return vec2<TT>(TT(0.5) * (h * cos_TT(y)) * h, _cx_negif_TT(im, ew_signbit_TT(x)));
        }
        if (y == TT(0)) { return vec2<TT>(ew_cosh_TT(x), _cx_negif_TT(y, ew_signbit_TT(x))); }
        return vec2<TT>(ew_cosh_TT(x) * cos_TT(y), ew_sinh_TT(x) * sin_TT(y));
    }
    if (x == TT(0)) { return vec2<TT>(ew_nan_TT(), TT(0)); }
    if (ew_isinf_TT(x)) {
        if (y == TT(0)) { return vec2<TT>(ew_inf_TT(), _cx_negif_TT(y, ew_signbit_TT(x))); }
        if (_cx_isfinite_TT(y)) { return vec2<TT>(_cx_inf_mul_TT(ew_inf_TT(), cos_TT(y)), _cx_inf_mul_TT(x, sin_TT(y))); }
        return vec2<TT>(ew_inf_TT(), ew_nan_TT());
    }
    if (ew_isnan_TT(x) && y == TT(0)) { return z; }
    return _cx_nan2_TT();
}

// @fn cx_tanh f32 f64
// Kahan's formula: t = tan y, s = sinh x, (beta rho s + i t) / (1 + beta s^2) with
// beta = 1 + t^2, rho = sqrt(1 + s^2); +-1 + tiny imaginary part for large |x|.
fn cx_tanh_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    if (ew_isnan_TT(x)) {
        if (y == TT(0)) { return z; }
        return _cx_nan2_TT();
    }
    if (ew_isinf_TT(x)) {
        // the spec's 1 + 0j for finite y > 0 (C99's sign of sin(2y) differs), conjugate below
        return vec2<TT>(_cx_copysign_TT(TT(1), x), _cx_copysign_TT(TT(0), y));
    }
    if (!_cx_isfinite_TT(y)) {
        if (x == TT(0)) { return vec2<TT>(x, ew_nan_TT()); }
        return _cx_nan2_TT();
    }
    if (abs(x) >= _cx_tanh_big_TT()) {
        let e = ew_exp_TT(ew_neg_TT(abs(x)));
        return vec2<TT>(_cx_copysign_TT(TT(1), x), TT(4) * sin_TT(y) * cos_TT(y) * e * e);
    }
    if (y == TT(0)) { return vec2<TT>(ew_tanh_TT(x), y); }
    let t = tan_TT(y);
    let beta = TT(1) + t * t;
    let s = ew_sinh_TT(x);
    let rho = sqrt(TT(1) + s * s);
    let den = TT(1) + beta * s * s;
    return vec2<TT>((beta * rho * s) / den, t / den);
}

// @fn cx_sin f32 f64
fn cx_sin_TT(z: vec2<TT>) -> vec2<TT> { return _cx_mul_mi_TT(cx_sinh_TT(_cx_mul_i_TT(z))); }
// @fn cx_cos f32 f64
fn cx_cos_TT(z: vec2<TT>) -> vec2<TT> { return cx_cosh_TT(_cx_mul_i_TT(z)); }
// @fn cx_tan f32 f64
fn cx_tan_TT(z: vec2<TT>) -> vec2<TT> { return _cx_mul_mi_TT(cx_tanh_TT(_cx_mul_i_TT(z))); }

// @fn _cx_asin_parts f32 f64
// For finite x, y >= 0: (asin real part, acos real part, the common imaginary magnitude
// log(A + sqrt(A^2 - 1))), A = (|z + 1| + |z - 1|) / 2 (Hull et al.).
fn _cx_asin_parts_TT(x: TT, y: TT) -> vec3<TT> {
    let half_pi = TT(1.57079632679489661923);
    if (max(x, y) > _cx_big_TT()) {
        // asin z ~ -i log(2iz): real atan2(x, y), imaginary log|z| + log 2
        let im = _cx_log_abs_TT(x, y) + TT(0.69314718055994530942);
        return vec3<TT>(ew_atan2_TT(x, y), ew_atan2_TT(y, x), im);
    }
    if (y == TT(0)) {
        if (x <= TT(1)) { return vec3<TT>(asin_TT(x), acos_TT(x), TT(0)); }
        return vec3<TT>(half_pi, TT(0), ew_acosh_TT(x));
    }
    let xp1 = x + TT(1);
    let xm1 = x - TT(1);
    let r = ew_hypot_TT(xp1, y);
    let s = ew_hypot_TT(xm1, y);
    let a = TT(0.5) * (r + s);
    let b = x / a;
    let y2 = y * y;
    var re_s: TT;
    var re_c: TT;
    if (b <= TT(0.6417)) {
        re_s = asin_TT(b);
        re_c = acos_TT(b);
    } else if (x <= TT(1)) {
        let d = TT(0.5) * (a + x) * (y2 / (r + xp1) + (s - xm1));
        re_s = atan_TT(x / sqrt(d));
        re_c = atan_TT(sqrt(d) / x);
    } else {
        let apx = a + x;
        let d = TT(0.5) * (apx / (r + xp1) + apx / (s + xm1));
        re_s = atan_TT(x / (y * sqrt(d)));
        re_c = atan_TT((y * sqrt(d)) / x);
    }
    var im: TT;
    if (a <= TT(1.5)) {
        var am1: TT;
        if (x < TT(1)) {
            // A - 1 = y^2 c, c = (1 / (r + x + 1) + 1 / (s + 1 - x)) / 2: y factored out, so
            // tiny y does not underflow
            let c = TT(0.5) * (TT(1) / (r + xp1) + TT(1) / (s - xm1));
            am1 = y2 * c;
            im = ew_log1p_TT(am1 + y * sqrt(c * (a + TT(1))));
        } else {
            am1 = TT(0.5) * (y2 / (r + xp1) + (s + xm1));
            im = ew_log1p_TT(am1 + sqrt(am1 * (a + TT(1))));
        }
    } else {
        im = ew_log_TT(a + sqrt(a * a - TT(1)));
    }
    return vec3<TT>(re_s, re_c, im);
}

// @fn cx_asinh f32 f64
// asinh z = -i asin(iz); odd and conjugate-symmetric; C99's special values.
fn cx_asinh_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    let ax = abs(x);
    let ay = abs(y);
    if (ew_isnan_TT(x)) {
        if (y == TT(0)) { return z; }
        if (ew_isinf_TT(y)) { return vec2<TT>(ew_inf_TT(), ew_nan_TT()); }
        return _cx_nan2_TT();
    }
    if (ew_isnan_TT(y)) {
        if (ew_isinf_TT(x)) { return vec2<TT>(x, y); }
        return _cx_nan2_TT();
    }
    var re: TT;
    var im: TT;
    if (ew_isinf_TT(x) || ew_isinf_TT(y)) {
        re = ew_inf_TT();
        if (!ew_isinf_TT(y)) {
            im = TT(0);
        } else if (ew_isinf_TT(x)) {
            im = TT(0.78539816339744830962);
        } else {
            im = TT(1.57079632679489661923);
        }
    } else {
        // asin(|y| + i|x|) = (R, I)  ->  asinh(|x| + i|y|) = (I, R)
        let p = _cx_asin_parts_TT(ay, ax);
        re = p.z;
        im = p.x;
    }
    return vec2<TT>(_cx_copysign_TT(re, x), _cx_copysign_TT(im, y));
}

// @fn cx_asin f32 f64
fn cx_asin_TT(z: vec2<TT>) -> vec2<TT> { return _cx_mul_mi_TT(cx_asinh_TT(_cx_mul_i_TT(z))); }

// @fn cx_acos f32 f64
// acos(conj z) = conj(acos z); real part in [0, pi]; C99's special values.
fn cx_acos_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    let pi = _cx_pi_TT();
    let minus_inf = _cx_negif_TT(ew_inf_TT(), !ew_signbit_TT(y));
    if (ew_isnan_TT(x)) {
        if (ew_isinf_TT(y)) { return vec2<TT>(x, minus_inf); }
        return _cx_nan2_TT();
    }
    if (ew_isnan_TT(y)) {
        if (x == TT(0)) { return vec2<TT>(TT(1.57079632679489661923), y); }
        if (ew_isinf_TT(x)) { return vec2<TT>(y, ew_inf_TT()); }
        return _cx_nan2_TT();
    }
    if (ew_isinf_TT(x)) {
        var re = select(TT(0), pi, x < TT(0));
        if (ew_isinf_TT(y)) { re = select(TT(0.78539816339744830962), TT(2.35619449019234492885), x < TT(0)); }
        return vec2<TT>(re, minus_inf);
    }
    if (ew_isinf_TT(y)) { return vec2<TT>(TT(1.57079632679489661923), minus_inf); }
    let p = _cx_asin_parts_TT(abs(x), abs(y));
    let re = select(p.y, pi - p.y, ew_signbit_TT(x));
    return vec2<TT>(re, _cx_negif_TT(p.z, !ew_signbit_TT(y)));
}

// @fn cx_acosh f32 f64
// acosh z = +-i acos z, real part >= 0, imaginary part with the sign of y.
fn cx_acosh_TT(z: vec2<TT>) -> vec2<TT> {
    let w = cx_acos_TT(z);
    if (ew_isnan_TT(w.x) && ew_isnan_TT(w.y)) { return w; }
    if (ew_isnan_TT(w.x)) { return vec2<TT>(abs(w.y), w.x); }
    if (ew_isnan_TT(w.y)) { return vec2<TT>(w.y, w.x); }
    return vec2<TT>(abs(w.y), _cx_copysign_TT(w.x, z.y));
}

// @fn cx_atanh f32 f64
// atanh z = log((1 + z) / (1 - z)) / 2: real part log1p(4x / ((1 - x)^2 + y^2)) / 4 (a
// difference of logarithms where that denominator underflows), imaginary part
// atan2(2y, (1 - x)(1 + x) - y^2) / 2; odd and conjugate-symmetric; C99's special values.
fn cx_atanh_TT(z: vec2<TT>) -> vec2<TT> {
    let x = z.x;
    let y = z.y;
    let ax = abs(x);
    let ay = abs(y);
    let half_pi = TT(1.57079632679489661923);
    if (ew_isnan_TT(x)) {
        if (ew_isinf_TT(y)) { return vec2<TT>(_cx_copysign_TT(TT(0), x), _cx_copysign_TT(half_pi, y)); }
        return _cx_nan2_TT();
    }
    if (ew_isnan_TT(y)) {
        if (ew_isinf_TT(x) || x == TT(0)) { return vec2<TT>(_cx_copysign_TT(TT(0), x), y); }
        return _cx_nan2_TT();
    }
    var re: TT;
    var im: TT;
    if (max(ax, ay) > _cx_big_TT()) {
        // real part x / |z|^2 (scaled), imaginary part pi/2
        if (ew_isinf_TT(ax) || ew_isinf_TT(ay)) {
            re = TT(0);
        } else {
            let m = max(ax, ay);
            let u = ax / m;
            let v = ay / m;
            re = (u / (u * u + v * v)) / m;
        }
        im = half_pi;
    } else {
        let d = (TT(1) - ax) * (TT(1) - ax) + ay * ay;
        if (d < _cx_tiny_TT()) {
            re = TT(0.5) * (_cx_log_abs_TT(TT(1) + ax, ay) - _cx_log_abs_TT(TT(1) - ax, ay));
        } else {
            re = TT(0.25) * ew_log1p_TT(TT(4) * ax / d);
        }
        im = TT(0.5) * ew_atan2_TT(TT(2) * ay, (TT(1) - ax) * (TT(1) + ax) - ay * ay);
    }
    return vec2<TT>(_cx_copysign_TT(re, x), _cx_copysign_TT(im, y));
}

// @fn cx_atan f32 f64
fn cx_atan_TT(z: vec2<TT>) -> vec2<TT> { return _cx_mul_mi_TT(cx_atanh_TT(_cx_mul_i_TT(z))); }
