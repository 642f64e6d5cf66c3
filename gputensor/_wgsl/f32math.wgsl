// f32math: single-precision transcendental functions for WGSL, accurate to about 1 ulp over the
// whole domain, with f32 and u32 arithmetic only (no shader-f64 / shader-int64: runs on Metal).
//
// Why: WGSL's f32 builtins are only as accurate as the driver makes them. Measured on lavapipe:
// atan 2e-5, asin 4e-4, acos 2.3e-4 relative error, log near 1 ~3e-5 relative, and sin/cos/tan
// of large arguments are garbage (sin(1e30) = -1). Only + - * /, sqrt, abs, floor/round,
// min/max, comparisons, conversions, countLeadingZeros and bitcasts are used here, and none of
// the results depends on / or sqrt being correctly rounded (Vulkan allows 2.5 ulp for x / y and
// sqrt): every quotient and square root is corrected with an exactly computed residual.
//
// Public functions (NumPy float32 semantics for NaN, +-inf, +-0 and domain errors):
//   atan_f32 asin_f32 acos_f32 atan2_f32(y, x) log_f32 log2_f32 log10_f32 log1p_f32
//   sin_f32 cos_f32 tan_f32
// Accuracy (lavapipe, against NumPy's float64 result): under 0.8 ulp of the exact value for every
// function over its whole domain, so within 1 ulp of NumPy's result rounded to float32 (and
// equal to it for > 99% of arguments); tests/test_f32math.py asserts 1 ulp and prints the maxima.
// sin/cos/tan keep it for every finite x: Cody-Waite reduction with pi/2 in 4 pieces for
// |x| < 12000 unless x is within 2^-17 of a multiple of pi/2, Payne-Hanek in 32-bit integer
// arithmetic (96 bits of 2/pi) otherwise; the closest float to a multiple of pi/2
// (x = 7.73e28, |r| ~ 1.6e-9) still gets r to ~2^-44 relative.
//
// Design rules, because the devices differ:
//  * fma() is NOT guaranteed to be fused (lavapipe rounds twice) and a*b+c MAY be contracted into
//    an fma (NVIDIA). No result depends on either: error-free products use Dekker's algorithm
//    with a 12/12-bit split by masking (_f32_two_prod), Cody-Waite constants have 11 significant
//    bits so that k*C is exact for |k| < 2^13.
//  * Mesa's NIR (lavapipe) applies "inexact" algebraic rewrites ((a + b) - a -> b, ...) and
//    NVIDIA's compiler reassociates, so every error-free transformation passes its
//    intermediates through _f32_opq, an integer identity no float optimiser sees through, and
//    final hi + lo sums take an opaque lo. NIR also folds constant factors ((v * 2^64) * 2^64 ->
//    v * 2^128 = v * inf), so no chain of constant factors here overflows when folded.
//  * naga compiles float == / != as ordered compares and drivers may assume no NaN/inf, so
//    special values are classified with integer tests on the bits.
//  * NVIDIA flushes f32 subnormals: subnormal arguments that are returned unchanged (sin, tan,
//    asin, atan, log1p of tiny x) come back bit-exact; log of a subnormal reads the bits; results
//    that are subnormal (atan2 of a tiny ratio) flush there.
//
// Format: a function library (`kernels.LIBRARIES`) of ordinary WGSL functions, each with the
// comment lines right above it; a function may call the others. Private helpers: `_f32_*`.

// +infinity.
fn _f32_inf() -> f32 {
    let bits = 0x7f800000u;  // (a let: inf is no constant expression)
    return bitcast<f32>(bits);
}

// A quiet NaN.
fn _f32_nan() -> f32 {
    let bits = 0x7fc00000u;
    return bitcast<f32>(bits);
}

// x is a NaN (integer test).
fn _f32_isnan(x: f32) -> bool {
    return (bitcast<u32>(x) << 1u) > 0xff000000u;
}

// The sign bit of x (true for -0.0).
fn _f32_signbit(x: f32) -> bool {
    return (bitcast<u32>(x) >> 31u) != 0u;
}

// |a| with the sign bit of b.
fn _f32_copysign(a: f32, b: f32) -> f32 {
    return bitcast<f32>(((bitcast<u32>(a) << 1u) >> 1u) | ((bitcast<u32>(b) >> 31u) << 31u));
}

// Identity on every value (a NaN may come back as another NaN) that the float optimiser cannot
// see through: a data-dependent integer OR that is 0 unless the bits are 0x7fbfdeac.
fn _f32_opq(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    return bitcast<f32>(b | u32(b == 0x7fbfdeacu));
}

// a = hi + lo exactly, hi = a with the low 12 mantissa bits cleared (12 significant bits), lo
// with at most 12 significant bits. Finite a.
fn _f32_split(a: f32) -> vec2<f32> {
    let hi = bitcast<f32>((bitcast<u32>(a) >> 12u) << 12u);
    return vec2<f32>(hi, _f32_opq(a - hi));
}

// s + e = a + b exactly with s = fl(a + b) (Knuth).
fn _f32_two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = _f32_opq(a + b);
    let bb = _f32_opq(s - a);
    let da = _f32_opq(a - _f32_opq(s - bb));
    let db = _f32_opq(b - bb);
    return vec2<f32>(s, da + db);
}

// s + e = a + b exactly with s = fl(a + b); requires |a| >= |b| (or a == 0).
fn _f32_fast_two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = _f32_opq(a + b);
    return vec2<f32>(s, b - _f32_opq(s - a));
}

// p + e = a * b with p = fl(a * b) and |a*b - p - e| <= 2^-44 |a*b| (Dekker, without relying
// on a fused fma). Finite a, b whose partial products neither overflow nor underflow
// (|a*b| in [2^-78, 2^126]).
fn _f32_two_prod(a: f32, b: f32) -> vec2<f32> {
    let p = _f32_opq(a * b);
    let sa = _f32_split(a);
    let sb = _f32_split(b);
    let t = _f32_opq(sa.x * sb.x - p);
    let e = ((t + sa.x * sb.y) + sa.y * sb.x) + sa.y * sb.y;
    return vec2<f32>(p, e);
}

// (nh + nl) / (dh + dl) as an unnormalised pair (q, c), relative error ~2^-44 whatever the
// rounding of the device's division. |nl| <= ulp(nh), |dl| <= ulp(dh), |nh| >= 2^-70,
// |dh| in [2^-60, 2^126], |nh / dh| <= 2^60.
fn _f32_dd_div(nh: f32, nl: f32, dh: f32, dl: f32) -> vec2<f32> {
    let q = nh / dh;
    let p = _f32_two_prod(q, dh);
    let r = ((_f32_opq(nh - p.x) - p.y) + nl) - q * dl;
    return vec2<f32>(q, _f32_opq(r / dh));
}

// sqrt(z) as (hi, lo) for z in [2^-60, 2^60] or z == 0: one correction step of the builtin.
fn _f32_sqrt_dd(z: f32) -> vec2<f32> {
    let s = sqrt(z);
    if (s == 0.0) {
        return vec2<f32>(s, 0.0);
    }
    let sq = _f32_two_prod(s, s);
    return vec2<f32>(s, _f32_opq((_f32_opq(z - sq.x) - sq.y) / (s + s)));
}

// Q(z) ~ (2 atanh(s)/s - 2) / z, z = s^2 in [0, 0.02945] (s = f/(2+f), f in [sqrt(1/2)-1,
// sqrt(2)-1]; error 5e-11 weighted by z, degree 3). Coefficients: Lawson (near-minimax) fits of
// the Taylor series in float64, rounded to f32 one at a time with the rest refitted.
fn _f32_poly_log(z: f32) -> f32 {
    return 0.6666666269302368 + z * (0.40000972151756287 + z * (0.2849876880645752 + z * 0.24279865622520447));
}

// log(1 + f) as (hi, lo) for f in [sqrt(1/2)-1, sqrt(2)-1] (relative error ~2^-28):
// log(1+f) = f - f^2/2 + s (f^2/2 + z Q(z)), s = f / (2 + f), z = s^2, with f - f^2/2 formed
// exactly (f^2/2 from the 12-bit split of f).
fn _f32_log1p_dd(f: f32) -> vec2<f32> {
    let s = f / (2.0 + f);
    let z = s * s;
    let fs = _f32_split(f);
    let qh = 0.5 * (fs.x * fs.x);
    let ql = 0.5 * (fs.y * (f + fs.x));
    let u = _f32_two_sum(f, -qh);
    let lo = (u.y - ql) + s * ((qh + ql) + z * _f32_poly_log(z));
    return vec2<f32>(u.x, _f32_opq(lo));
}

// For finite x > 0 (subnormals included, read from the bits): log(x) = e*ln2 + h + l returned
// as (e, h, l), x = 2^e * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)).
fn _f32_log_parts(x: f32) -> vec3<f32> {
    var b = bitcast<u32>(x);
    var e = i32(b >> 23u) - 127;
    if ((b >> 23u) == 0u) {
        // subnormal: shift the leading 1 up to bit 23
        let sh = countLeadingZeros(b) - 8u;
        b = b << sh;
        e = -126 - i32(sh);
    }
    let mb = (b << 9u) >> 9u;
    var m: f32;
    if (mb > 0x3504f3u) {
        m = bitcast<f32>(mb | 0x3f000000u);  // [sqrt(1/2), 1)
        e = e + 1;
    } else {
        m = bitcast<f32>(mb | 0x3f800000u);  // [1, sqrt(2)]
    }
    let l = _f32_log1p_dd(_f32_opq(m - 1.0));
    return vec3<f32>(f32(e), l.x, l.y);
}

// The result of a log-family function for x NaN, <= 0 or +inf (x, -inf, NaN, x), else 0 with
// `.y` = 1 to say "regular".
fn _f32_log_special(x: f32) -> vec2<f32> {
    let b = bitcast<u32>(x);
    if ((b << 1u) > 0xff000000u) {
        return vec2<f32>(x, 0.0);
    }
    if ((b << 1u) == 0u) {
        return vec2<f32>(-_f32_inf(), 0.0);
    }
    if ((b >> 31u) != 0u) {
        return vec2<f32>(_f32_nan(), 0.0);
    }
    if (b == 0x7f800000u) {
        return vec2<f32>(x, 0.0);
    }
    return vec2<f32>(0.0, 1.0);
}

// Natural logarithm: e*ln2 + log(1 + f), ln2 split 16 + 24 bits (e*LN2_HI exact).
fn log_f32(x: f32) -> f32 {
    let sp = _f32_log_special(x);
    if (sp.y == 0.0) {
        return sp.x;
    }
    let p = _f32_log_parts(x);
    let a = _f32_two_sum(p.x * 0.693145751953125, p.y);
    return a.x + _f32_opq(a.y + (p.z + p.x * 1.428606765330187e-06));
}

// Base-2 logarithm: e + log(1 + f) / ln2 (exact for powers of two).
fn log2_f32(x: f32) -> f32 {
    let sp = _f32_log_special(x);
    if (sp.y == 0.0) {
        return sp.x;
    }
    let p = _f32_log_parts(x);
    let m = _f32_two_prod(p.y, 1.4426950216293335);
    let lo = m.y + (p.y * 1.925963033500011e-08 + p.z * 1.4426950216293335);
    let a = _f32_two_sum(p.x, m.x);
    return a.x + _f32_opq(a.y + lo);
}

// Base-10 logarithm: e*log10(2) + log(1 + f) / ln10 (log10(2) split 16 + 24 bits).
fn log10_f32(x: f32) -> f32 {
    let sp = _f32_log_special(x);
    if (sp.y == 0.0) {
        return sp.x;
    }
    let p = _f32_log_parts(x);
    let m = _f32_two_prod(p.y, 0.4342944920063019);
    let lo = m.y + (p.y * -1.0103049952192578e-08 + p.z * 0.4342944920063019);
    let a = _f32_two_sum(p.x * 0.30103302001953125, m.x);
    return a.x + _f32_opq(a.y + (lo + p.x * -3.024355464731343e-06));
}

// log(1 + x), accurate near 0: |x| < 2^-24 -> x; x in [sqrt(1/2)-1, sqrt(2)-1]: log(1+x) with
// x itself as f (nothing rounded); beyond: 1 + x = u + c exactly, log(u) + c/u.
fn log1p_f32(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if ((b << 1u) > 0xff000000u) {
        return x;
    }
    if ((b << 1u) < 0x67000000u) {
        return x;  // |x| < 2^-24 (zeros and subnormals included)
    }
    if (b == 0xbf800000u) {
        return -_f32_inf();
    }
    if (b > 0xbf800000u) {
        return _f32_nan();  // x < -1
    }
    if (b == 0x7f800000u) {
        return x;
    }
    if (x >= -0.2928932309150696 && x <= 0.41421356797218323) {
        let l = _f32_log1p_dd(x);
        return l.x + l.y;
    }
    let u = _f32_two_sum(1.0, x);
    let p = _f32_log_parts(u.x);
    let a = _f32_two_sum(p.x * 0.693145751953125, p.y);
    return a.x + _f32_opq(a.y + ((p.z + u.y / u.x) + p.x * 1.428606765330187e-06));
}

// S(z) ~ (sin(r) - r) / r^3, z = r^2 in [0, 0.618] (error 1.6e-10 weighted by z, degree 3).
fn _f32_poly_sin(z: f32) -> f32 {
    return -0.1666666716337204 + z * (0.008333380334079266 + z * (-0.0001985349808819592 + z * 2.8372476208460284e-06));
}

// C(z) ~ (cos(r) - 1 + r^2/2) / r^4, z = r^2 in [0, 0.618] (error 1.1e-10 weighted by z^2,
// degree 2).
fn _f32_poly_cos(z: f32) -> f32 {
    return 0.04166664555668831 + z * (-0.00138873013202101 + z * 2.4430661142105237e-05);
}

// sin and cos of r = rh + rl (|r| <= pi/4 + tiny, |rl| <= 2^-8 |rh|) as unnormalised pairs
// (sin_hi, sin_lo, cos_hi, cos_lo). r^2 = zh + zl with zh = (12-bit head of rh)^2 exact.
fn _f32_sincos_core(rh: f32, rl: f32) -> vec4<f32> {
    let sp = _f32_split(rh);
    let zh = sp.x * sp.x;
    let zl = sp.y * (rh + sp.x);
    let z = zh + zl;
    // sin(r) = rh + rh*z*S(z) + rl*cos(rh)
    let slo = rh * (z * _f32_poly_sin(z)) + rl * (1.0 - 0.5 * z);
    // cos(r) = (1 - z/2) + z^2 C(z) - rl*sin(rh); 1 - zh/2 split exactly
    let w = _f32_fast_two_sum(1.0, -0.5 * zh);
    let clo = (w.y - 0.5 * zl) + (z * z * _f32_poly_cos(z) - rh * rl);
    return vec4<f32>(rh, _f32_opq(slo), w.x, _f32_opq(clo));
}

// Word i (0..8) of the table [32 zero bits, then the binary fraction of 2/pi] (a select chain:
// no private array, which lavapipe would initialise on every call).
fn _f32_two_over_pi_word(i: u32) -> u32 {
    var v = 0u;
    v = select(v, 0xa2f9836eu, i == 1u);
    v = select(v, 0x4e441529u, i == 2u);
    v = select(v, 0xfc2757d1u, i == 3u);
    v = select(v, 0xf534ddc0u, i == 4u);
    v = select(v, 0xdb629599u, i == 5u);
    v = select(v, 0x3c439041u, i == 6u);
    v = select(v, 0xfe5163abu, i == 7u);
    v = select(v, 0xdebbc561u, i == 8u);
    return v;
}

// (m * w + carry) for a 24-bit m and a 32-bit w, in bytes: returns (low 32 bits, the carry
// above them); exact in u32 arithmetic (each step is < 2^32), carry < 2^24.
fn _f32_mul_word(m: u32, w: u32, carry: u32) -> vec2<u32> {
    let a0 = carry + m * (w & 0xffu);
    let a1 = (a0 >> 8u) + m * ((w >> 8u) & 0xffu);
    let a2 = (a1 >> 8u) + m * ((w >> 16u) & 0xffu);
    let a3 = (a2 >> 8u) + m * (w >> 24u);
    let lo = (a0 & 0xffu) | ((a1 & 0xffu) << 8u) | ((a2 & 0xffu) << 16u) | (a3 << 24u);
    return vec2<u32>(lo, a3 >> 8u);
}

// Payne-Hanek reduction for finite |x| >= pi/4: x = k*pi/2 + r, |r| <= pi/4, returned as
// (r_hi, r_lo, k mod 4). |x| = m * 2^ex with m a 24-bit integer; only the bits of 2/pi from
// position ex-1 on matter mod 4, so x*2/pi mod 4 = (m * W mod 2^96) * 2^-94 with W the 96 bits
// of 2/pi from there (truncation error < 2^-70 quarter turns; the smallest |r| of any float is
// 2^-30 quarter turns). The product is formed bytewise in u32.
fn _f32_rem_pio2_large(x: f32) -> vec3<f32> {
    let bits = bitcast<u32>(x);
    let ex = i32((bits << 1u) >> 24u) - 150;
    let m = ((bits << 9u) >> 9u) | 0x800000u;
    // W starts at 2/pi's bit ex - 1, table bit t = ex + 30 (>= 6): words wi .. wi+3, shifted
    let t = u32(ex + 30);
    let wi = t >> 5u;
    let sh = t & 31u;
    let u0 = _f32_two_over_pi_word(wi);
    let u1 = _f32_two_over_pi_word(wi + 1u);
    let u2 = _f32_two_over_pi_word(wi + 2u);
    let u3 = _f32_two_over_pi_word(wi + 3u);
    let w2 = (u0 << sh) | ((u1 >> 1u) >> (31u - sh));
    let w1 = (u1 << sh) | ((u2 >> 1u) >> (31u - sh));
    let w0 = (u2 << sh) | ((u3 >> 1u) >> (31u - sh));
    let c0 = _f32_mul_word(m, w0, 0u);
    let c1 = _f32_mul_word(m, w1, c0.y);
    let p2 = _f32_mul_word(m, w2, c1.y).x;
    let p1 = c1.x;
    let p0 = c0.x;
    // quadrant = top 2 bits; the 94 fraction bits, left-aligned in f2:f1:f0
    var q = p2 >> 30u;
    var f2 = (p2 << 2u) | (p1 >> 30u);
    var f1 = (p1 << 2u) | (p0 >> 30u);
    var f0 = p0 << 2u;
    var neg = false;
    if ((f2 >> 31u) != 0u) {
        // fraction >= 1/2: r = fraction - 1 (2^96 - F, negated), quadrant + 1
        f0 = ~f0 + 1u;
        f1 = ~f1 + u32(f0 == 0u);
        f2 = ~f2 + u32(f0 == 0u && f1 == 0u);
        q = q + 1u;
        neg = true;
    }
    var e = 0u;
    if (f2 == 0u) {
        f2 = f1;
        f1 = f0;
        f0 = 0u;
        e = 32u;
    }
    let lz = countLeadingZeros(f2);
    let g2 = (f2 << lz) | ((f1 >> 1u) >> (31u - lz));
    let g1 = (f1 << lz) | ((f0 >> 1u) >> (31u - lz));
    e = e + lz;
    // fraction = (g2 >> 8) * 2^(-24-e) + (next 24 bits) * 2^(-48-e), both exact in f32
    let fh = f32(g2 >> 8u) * bitcast<f32>((103u - e) << 23u);
    let fl = f32(((g2 & 0xffu) << 16u) | (g1 >> 16u)) * bitcast<f32>((79u - e) << 23u);
    // r = fraction * pi/2
    let pr = _f32_two_prod(fh, 1.5707963705062866);
    var r = _f32_fast_two_sum(pr.x, pr.y + (fh * -4.371138828673793e-08 + fl * 1.5707963705062866));
    if (neg) {
        r = -r;
    }
    if (_f32_signbit(x)) {
        return vec3<f32>(-r.x, -r.y, f32((4u - q) & 3u));
    }
    return vec3<f32>(r.x, r.y, f32(q & 3u));
}

// x = k*pi/2 + r for finite x: returns (r_hi, r_lo, k mod 4) with |r| <= pi/4 (+ rounding), r to
// about 2^-32 relative. |x| < 12000 and |r| >= 2^-17: Cody-Waite with pi/2 = P1 + P2 + P3 + P4
// (P1..P3 with at most 11 significant bits, so k*Pi is exact for |k| < 2^13; x - k*P1 - k*P2 is
// exact because both products lie on x's grid and the difference is below 2; the rounding of
// k*P4 is < 2^-49). Beyond, and near multiples of pi/2: Payne-Hanek.
fn _f32_rem_pio2(x: f32) -> vec3<f32> {
    let ax = abs(x);
    if (ax <= 0.7853981852531433) {
        return vec3<f32>(x, 0.0, 0.0);
    }
    if (ax < 12000.0) {
        let k = round(x * 0.6366197723675814);
        let a1 = _f32_opq(x - k * 1.5703125);
        let a2 = _f32_opq(a1 - k * 0.0004837512969970703);
        let r = _f32_two_sum(a2, -(k * 7.549533620476723e-08));
        if (abs(r.x) >= 7.62939453125e-06) {
            return vec3<f32>(r.x, r.y - k * 2.5633440682570896e-12, f32(i32(k) & 3));
        }
    }
    return _f32_rem_pio2_large(x);
}

// Sine (any finite x; inf/NaN -> NaN).
fn sin_f32(x: f32) -> f32 {
    let b = bitcast<u32>(x) << 1u;
    if (b >= 0xff000000u) {
        return _f32_nan();
    }
    if (b < 0x73000000u) {
        return x;  // |x| < 2^-12: sin x = x to within 2^-26 relative
    }
    let red = _f32_rem_pio2(x);
    let sc = _f32_sincos_core(red.x, red.y);
    let q = i32(red.z);
    var v = sc.x + sc.y;
    if ((q & 1) != 0) {
        v = sc.z + sc.w;
    }
    if (q >= 2) {
        v = -v;
    }
    return v;
}

// Cosine (any finite x; inf/NaN -> NaN).
fn cos_f32(x: f32) -> f32 {
    if ((bitcast<u32>(x) << 1u) >= 0xff000000u) {
        return _f32_nan();
    }
    let red = _f32_rem_pio2(x);
    let sc = _f32_sincos_core(red.x, red.y);
    let q = i32(red.z);
    var v = sc.z + sc.w;
    if ((q & 1) != 0) {
        v = sc.x + sc.y;
    }
    if (q == 1 || q == 2) {
        v = -v;
    }
    return v;
}

// Tangent (any finite x; inf/NaN -> NaN): sin/cos or -cos/sin as a corrected quotient.
fn tan_f32(x: f32) -> f32 {
    let b = bitcast<u32>(x) << 1u;
    if (b >= 0xff000000u) {
        return _f32_nan();
    }
    if (b < 0x73000000u) {
        return x;  // |x| < 2^-12: tan x = x to within 2^-25 relative
    }
    let red = _f32_rem_pio2(x);
    let sc = _f32_sincos_core(red.x, red.y);
    let s = _f32_fast_two_sum(sc.x, sc.y);
    let c = _f32_fast_two_sum(sc.z, sc.w);
    if ((i32(red.z) & 1) == 0) {
        let t = _f32_dd_div(s.x, s.y, c.x, c.y);
        return t.x + t.y;
    }
    let t = _f32_dd_div(c.x, c.y, s.x, s.y);
    return -(t.x + t.y);
}

// P(z) ~ (asin(s) - s) / s^3, z = s^2 in [0, 0.25] (error 2.9e-10 weighted by z, degree 5).
fn _f32_poly_asin(z: f32) -> f32 {
    return 0.16666659712791443 + z * (0.07500521093606949 + z * (0.04451363533735275 + z * (0.03183605521917343
        + z * (0.01432918943464756 + z * 0.03767312690615654))));
}

// Arcsine: |x| <= 1/2: x + x^3 P(x^2); beyond: pi/2 - 2 asin(sqrt((1-|x|)/2)). |x| > 1 -> NaN.
fn asin_f32(x: f32) -> f32 {
    let a = abs(x);
    if (_f32_isnan(x) || a > 1.0) {
        return _f32_nan();
    }
    if ((bitcast<u32>(x) << 1u) < 0x73000000u) {
        return x;  // |x| < 2^-12
    }
    if (a <= 0.5) {
        let z = x * x;
        return x + _f32_opq(x * (z * _f32_poly_asin(z)));
    }
    let z = 0.5 * (1.0 - a);
    let s = _f32_sqrt_dd(z);
    let t = s.y + s.x * (z * _f32_poly_asin(z));
    let h = _f32_two_sum(1.5707963705062866, -2.0 * s.x);
    let v = h.x + _f32_opq(h.y + (-4.371138828673793e-08 - 2.0 * t));
    return _f32_copysign(v, x);
}

// Arccosine: |x| <= 1/2: pi/2 - asin(x); x > 1/2: 2 asin(sqrt((1-x)/2));
// x < -1/2: pi - 2 asin(sqrt((1+x)/2)). |x| > 1 -> NaN.
fn acos_f32(x: f32) -> f32 {
    let a = abs(x);
    if (_f32_isnan(x) || a > 1.0) {
        return _f32_nan();
    }
    if (a <= 0.5) {
        let z = x * x;
        let h = _f32_two_sum(1.5707963705062866, -x);
        return h.x + _f32_opq(h.y + (-4.371138828673793e-08 - x * (z * _f32_poly_asin(z))));
    }
    let z = 0.5 * (1.0 - a);
    let s = _f32_sqrt_dd(z);
    let t = s.y + s.x * (z * _f32_poly_asin(z));
    if (x > 0.0) {
        return 2.0 * s.x + _f32_opq(2.0 * t);
    }
    let h = _f32_two_sum(3.1415927410125732, -2.0 * s.x);
    return h.x + _f32_opq(h.y + (-8.742277657347586e-08 - 2.0 * t));
}

// A(z) ~ (atan(t) - t) / t^3, z = t^2 in [0, 0.1936] (|t| <= 0.44; error 6.3e-11 weighted by
// z, degree 5).
fn _f32_poly_atan(z: f32) -> f32 {
    return -0.3333333134651184 + z * (0.19999803602695465 + z * (-0.14279219508171082 + z * (0.1101127415895462
        + z * (-0.08296116441488266 + z * 0.043852802366018295))));
}

// atan(n / d) in [0, pi/2] as (hi, lo) for finite n, d >= 0, not both 0, max(n, d) in
// [2^-12, 2^116] (so the denominators stay below 2^126). The ratio is never rounded: with c in {0, 1/2, 1, 3/2, inf} chosen by n/d,
// t = (n/d - c)/(1 + c n/d) is formed from n and d (numerator and denominator as exact sums),
// |t| <= 0.44, and atan(n/d) = atan(c) + atan(t).
fn _f32_atan_core(n: f32, d: f32) -> vec2<f32> {
    var num = vec2<f32>(n, 0.0);
    var den = vec2<f32>(d, 0.0);
    var base = vec2<f32>(0.0, 0.0);
    if (n < 0.4375 * d) {
        // c = 0
    } else if (n < 0.6875 * d) {
        // c = 1/2: (2n - d) / (2d + n), 2n - d exact
        num = vec2<f32>(2.0 * n - d, 0.0);
        den = _f32_two_sum(2.0 * d, n);
        base = vec2<f32>(0.46364760398864746, 5.01215868808913e-09);
    } else if (n < 1.1875 * d) {
        // c = 1: (n - d) / (n + d), n - d exact
        num = vec2<f32>(n - d, 0.0);
        den = _f32_two_sum(n, d);
        base = vec2<f32>(0.7853981852531433, -2.1855694143368964e-08);
    } else if (n < 2.4375 * d) {
        // c = 3/2: (2n - 3d) / (2d + 3n)
        let d3 = _f32_two_sum(2.0 * d, d);
        num = _f32_two_sum(2.0 * n - d3.x, -d3.y);
        let n3 = _f32_two_sum(2.0 * n, n);
        let s = _f32_two_sum(2.0 * d, n3.x);
        den = _f32_fast_two_sum(s.x, s.y + n3.y);
        base = vec2<f32>(0.9827937483787537, -2.5131424052915463e-08);
    } else {
        // c = inf: pi/2 + atan(-d/n)
        num = vec2<f32>(-d, 0.0);
        den = vec2<f32>(n, 0.0);
        base = vec2<f32>(1.5707963705062866, -4.371138828673793e-08);
    }
    var t = vec2<f32>(num.x / den.x, 0.0);
    if (abs(num.x) >= 8.470329472543003e-22) {
        // (below 2^-70 the quotient is < 2^-70 too: no correction needed, and it would underflow)
        t = _f32_dd_div(num.x, num.y, den.x, den.y);
    }
    let z = t.x * t.x;
    let h = _f32_two_sum(base.x, t.x);
    let lo = (h.y + base.y) + (t.x * (z * _f32_poly_atan(z)) + t.y * (1.0 - z));
    return vec2<f32>(h.x, _f32_opq(lo));
}

// Arctangent (+-inf -> +-pi/2).
fn atan_f32(x: f32) -> f32 {
    let b = bitcast<u32>(x) << 1u;
    if (b > 0xff000000u || b < 0x73000000u) {
        return x;  // NaN, or |x| < 2^-12: atan x = x to within 2^-26 relative
    }
    if (b >= 0x99000000u) {
        return _f32_copysign(1.5707963705062866, x);  // |x| >= 2^26: pi/2 - 1/x rounds to pi/2
    }
    let r = _f32_atan_core(abs(x), 1.0);
    return _f32_copysign(r.x + r.y, x);
}

// v * 2^149 for 0 <= v < 2^-25 (exact; a subnormal v is read from its integer significand).
fn _f32_mul_2p149(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    if (b < 0x00800000u) {
        return f32(b);
    }
    return bitcast<f32>(b + (149u << 23u));  // exponent + 149 (a constant 2^149 would overflow)
}

// v * 2^56 for 0 <= v < 2^60, exact also for a subnormal v (read from its integer significand:
// adapters that flush subnormals, NVIDIA's, would give 0).
fn _f32_mul_2p56(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    if (b < 0x00800000u) {
        return f32(b) * 1.0097419586828951e-28;  // b * 2^-149 * 2^56 = b * 2^-93 (normal)
    }
    return bitcast<f32>(b + (56u << 23u));
}

// Angle of the point (x, y) in [-pi, pi], with the C99/NumPy rules for zeros, infinities, NaN.
fn atan2_f32(y: f32, x: f32) -> f32 {
    if (_f32_isnan(x) || _f32_isnan(y)) {
        return _f32_nan();
    }
    let bx = bitcast<u32>(x) << 1u;
    let by = bitcast<u32>(y) << 1u;
    let xneg = _f32_signbit(x);
    if (by == 0u) {
        if (xneg) {
            return _f32_copysign(3.1415927410125732, y);
        }
        return y;
    }
    if (by == 0xff000000u) {
        if (bx == 0xff000000u) {
            return _f32_copysign(select(0.7853981852531433, 2.356194496154785, xneg), y);
        }
        return _f32_copysign(1.5707963705062866, y);
    }
    if (bx == 0xff000000u) {
        return _f32_copysign(select(0.0, 3.1415927410125732, xneg), y);
    }
    if (bx == 0u) {
        return _f32_copysign(1.5707963705062866, y);
    }
    // scale (by powers of two) so that max(|x|, |y|) is in [2^60, 2^116): the core divides by
    // up to 5 max(n, d), which must stay below 2^126 (NVIDIA divides through a reciprocal that
    // flushes to zero above that). Both below 2^-25: times 2^149 first, subnormals through the
    // integer significand (exact even where the float unit flushes subnormals).
    var n = bitcast<f32>(by >> 1u);
    var d = bitcast<f32>(bx >> 1u);
    if (max(bx, by) < 0x66000000u) {
        n = _f32_mul_2p149(n);
        d = _f32_mul_2p149(d);
    }
    if (max(n, d) >= 8.307674973655724e+34) {
        n = n * 0.000244140625;
        d = d * 0.000244140625;
    } else {
        for (var i = 0; i < 2; i = i + 1) {
            if (max(n, d) >= 1.152921504606847e+18) {
                break;
            }
            n = _f32_mul_2p56(n);
            d = _f32_mul_2p56(d);
        }
    }
    var v: f32;
    if (n < d * 9.094947017729282e-13 && !xneg) {
        // |y/x| < 2^-40: atan(t) = t to 2^-80 relative. t is formed 2^40 times larger and
        // scaled back, so its correction term is never a subnormal (flushed to zero on NVIDIA).
        let q = _f32_dd_div(n * 1099511627776.0, 0.0, d, 0.0);
        if (q.x < 1.1754943508222875e-38 * 1099511627776.0) {
            // a subnormal result: its bits are the quotient in units of 2^-149, rounded to
            // nearest even as an integer (no subnormal arithmetic, which NVIDIA flushes)
            let units = round(q.x * 6.490371073168535e+32 + q.y * 6.490371073168535e+32);
            v = bitcast<f32>(u32(units));
        } else {
            v = (q.x + q.y) * 9.094947017729282e-13;
        }
    } else {
        let r = _f32_atan_core(n, d);
        if (xneg) {
            let h = _f32_two_sum(3.1415927410125732, -r.x);
            v = h.x + _f32_opq(h.y + (-8.742277657347586e-08 - r.y));
        } else {
            v = r.x + r.y;
        }
    }
    return _f32_copysign(v, y);
}
