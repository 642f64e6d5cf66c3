// f64math: double-precision transcendental functions for WGSL (needs the `shader-f64` and
// `shader-int64` features; no `enable` directive is needed for either in naga).
//
// Why: on Vulkan the WGSL builtins exp/log/sin/... map to GLSL.std.450 instructions that exist
// only for 16/32-bit floats; with f64 arguments they return garbage. Only arithmetic, sqrt, abs,
// floor/ceil/round/trunc, min/max, ldexp/frexp, sign, comparisons, conversions and bitcasts
// between f64 and u64 are trusted here.
//
// Public functions (NumPy float64 semantics for NaN, +-inf, +-0, overflow, underflow, domain):
//   exp_f64 exp2_f64 log_f64 log2_f64 sin_f64 cos_f64 tan_f64 asin_f64 acos_f64 atan_f64
//   atan2_f64(y, x)
// Accuracy against correctly rounded values (400+-bit reference, lavapipe and an NVIDIA H200):
// at most 0.78 ulp for every function over its whole domain; within 1 ulp of NumPy (glibc).
// sin/cos/tan keep that accuracy for every finite x: Cody-Waite reduction for |x| < 2^21,
// Payne-Hanek with a 1184-bit 2/pi table above (worst case 6381956970095103 * 2^797 included).
// Subnormal results of exp/exp2 are rounded twice (<= 0.76 ulp of the subnormal spacing).
//
// Design rules, because the devices differ:
//  * fma() is NOT guaranteed to be fused (lavapipe rounds twice) and a*b+c MAY be contracted into
//    an fma (NVIDIA). So no result here depends on either: error-free products use Dekker's
//    algorithm with a bit-shift split (_f64_two_prod), Cody-Waite constants have trailing zero
//    bits so that k*C is exact, and fma() is only used where fused or not are both fine (Horner).
//  * Polynomial coefficients are Chebyshev-interpolation (near-minimax) fits computed in 400-bit
//    arithmetic, rounded to double; the fitted function and interval are named at each one.
//  * Mesa's NIR (lavapipe, RADV, ANV, NVK) applies "inexact" algebraic rewrites to every float
//    op that SPIR-V does not mark NoContraction, and naga never marks one: (a + b) - a -> b,
//    (1 + r) - 1 -> r, x - x -> 0, ... That silently zeroes the error terms of two-sum and
//    friends. NVIDIA's compiler reassociates f64 arithmetic too (measured on an H200: without
//    barriers tan was off by 1e10 ulp). So inside every error-free transformation each
//    intermediate passes through _f64_opq, an integer identity no float optimiser can see
//    through, and final hi + lo sums take an opaque lo.
//  * Vulkan lets drivers assume no NaN/inf in float compares, so special values are classified
//    with integer tests on the bits (_f64_isnan, _f64_isfinite, _f64_signbit).
//  * lavapipe (Mesa 22.3) miscompiles some 64-bit AND/OR masks with large constants in some
//    contexts, so bit fields are cut with shifts, never with 64-bit masks.
//  * NaN and inf are made from bit patterns; no const expression overflows.
//
// Format: a function library (`kernels.LIBRARIES`) of ordinary WGSL functions, each with the
// comment lines right above it; a function may call the others. Private helpers: `_f64_*`.

// +infinity.
fn _f64_inf() -> f64 {
    return bitcast<f64>(0x7ff0000000000000lu);
}

// A quiet NaN.
fn _f64_nan() -> f64 {
    return bitcast<f64>(0x7ff8000000000000lu);
}

// x is a NaN (integer test: valid even where the compiler assumes no NaN).
fn _f64_isnan(x: f64) -> bool {
    let b = bitcast<u64>(x);
    return u32((b << 1u) >> 53u) == 2047u && (b << 12u) != 0lu;
}

// x is neither infinite nor NaN (integer test).
fn _f64_isfinite(x: f64) -> bool {
    return u32((bitcast<u64>(x) << 1u) >> 53u) != 2047u;
}

// The sign bit of x (true for -0.0).
fn _f64_signbit(x: f64) -> bool {
    return (bitcast<u64>(x) >> 63u) != 0lu;
}

// |a| with the sign bit of b.
fn _f64_copysign(a: f64, b: f64) -> f64 {
    let m = abs(a);
    return select(m, -m, _f64_signbit(b));
}

// Identity on every value (a NaN may come back as another NaN) that the float optimiser cannot
// see through: a data-dependent integer OR that is 0 unless the high word is 0x7ff7dead.
fn _f64_opq(v: f64) -> f64 {
    let b = bitcast<u64>(v);
    return bitcast<f64>(b | u64(u32(b >> 32u) == 0x7ff7deadu));
}

// a = hi + lo exactly, hi = a with the low 27 mantissa bits cleared (26 significant bits),
// lo has at most 27 significant bits. Finite a only.
fn _f64_split(a: f64) -> vec2<f64> {
    let hi = bitcast<f64>((bitcast<u64>(a) >> 27u) << 27u);
    return vec2<f64>(hi, _f64_opq(a - hi));
}

// s + e = a + b exactly with s = fl(a + b) (Knuth).
fn _f64_two_sum(a: f64, b: f64) -> vec2<f64> {
    let s = _f64_opq(a + b);
    let bb = _f64_opq(s - a);
    let da = _f64_opq(a - _f64_opq(s - bb));
    let db = _f64_opq(b - bb);
    return vec2<f64>(s, da + db);
}

// s + e = a + b exactly with s = fl(a + b); requires |a| >= |b| (or a == 0).
fn _f64_fast_two_sum(a: f64, b: f64) -> vec2<f64> {
    let s = _f64_opq(a + b);
    return vec2<f64>(s, b - _f64_opq(s - a));
}

// p + e = a * b with p = fl(a * b) and |a*b - p - e| <= 2^-100 |a*b| (Dekker, without relying
// on a fused fma). Finite a, b whose product neither overflows nor underflows.
fn _f64_two_prod(a: f64, b: f64) -> vec2<f64> {
    let p = _f64_opq(a * b);
    let sa = _f64_split(a);
    let sb = _f64_split(b);
    let t = _f64_opq(sa.x * sb.x - p);
    let e = ((t + sa.x * sb.y) + sa.y * sb.x) + sa.y * sb.y;
    return vec2<f64>(p, e);
}

// (nh + nl) / (dh + dl) as an unnormalised pair (q, c), relative error ~2^-100.
// |nl| <= ulp(nh), |dl| <= ulp(dh), dh != 0, |dh| < 2^1000. When |nh| or |q| < 2^-900 the
// correction is skipped (its partial products would underflow): q = nh / dh alone.
fn _f64_dd_div(nh: f64, nl: f64, dh: f64, dl: f64) -> vec2<f64> {
    let q = nh / dh;
    if (abs(q) < 1.1830521861667747e-271lf || abs(nh) < 1.1830521861667747e-271lf) {
        return vec2<f64>(q, 0.0lf);
    }
    let p = _f64_two_prod(q, dh);
    let r = ((_f64_opq(nh - p.x) - p.y) + nl) - q * dl;
    return vec2<f64>(q, _f64_opq(r / dh));
}

// 2^k for -1022 <= k <= 1023.
fn _f64_pow2i(k: i32) -> f64 {
    return bitcast<f64>(u64(k + 1023) << 52u);
}

// p * 2^k for -2044 <= k <= 2046 with one rounding (overflow -> inf, underflow -> subnormal/0).
fn _f64_scale2(p: f64, k: i32) -> f64 {
    let k1 = k / 2;
    return (p * _f64_pow2i(k1)) * _f64_pow2i(k - k1);
}

// E(r) ~ (e^r - 1 - r) / r^2 on |r| <= 0.347 (error 1.4e-18, degree 10).
fn _f64_poly_exp(r: f64) -> f64 {
    var p = 2.091477283224809e-09lf;
    p = fma(p, r, 2.510533724466521e-08lf);
    p = fma(p, r, 2.755727343657049e-07lf);
    p = fma(p, r, 2.755725511097889e-06lf);
    p = fma(p, r, 2.480158732571076e-05lf);
    p = fma(p, r, 0.00019841269875048905lf);
    p = fma(p, r, 0.0013888888888883703lf);
    p = fma(p, r, 0.00833333333332607lf);
    p = fma(p, r, 0.04166666666666667lf);
    p = fma(p, r, 0.1666666666666667lf);
    return fma(p, r, 0.5lf);
}

// e^(rh + rl) for |rh + rl| <= 0.347, |rl| small: 1 + rh is formed exactly, then the rest added.
fn _f64_exp_core(rh: f64, rl: f64) -> f64 {
    let r = rh + rl;
    let h = _f64_fast_two_sum(1.0lf, rh);
    return h.x + _f64_opq((h.y + rl) + r * r * _f64_poly_exp(r));
}

// e^x. x = k ln2 + r, |r| <= ln2/2, ln2 split as 42 + 53 bits (k*LN2_HI exact for |k| <= 2^11).
fn exp_f64(x: f64) -> f64 {
    if (_f64_isnan(x)) {
        return x;
    }
    if (x > 709.8lf) {
        return _f64_inf();
    }
    if (x < -745.2lf) {
        return 0.0lf;
    }
    let k = round(x * 1.4426950408889634lf);
    let rh = _f64_opq(x - k * 0.6931471805598903lf);
    let rl = -(k * 5.497923018708371e-14lf);
    return _f64_scale2(_f64_exp_core(rh, rl), i32(k));
}

// 2^x. x = k + f, |f| <= 1/2 (exact), 2^f = e^(f ln2) with f*ln2 formed as a double-double.
fn exp2_f64(x: f64) -> f64 {
    if (_f64_isnan(x)) {
        return x;
    }
    if (x >= 1024.0lf) {
        return _f64_inf();
    }
    if (x < -1080.0lf) {
        return 0.0lf;
    }
    let k = round(x);
    let f = x - k;
    let t = _f64_two_prod(f, 0.6931471805599453lf);
    let tl = t.y + f * 2.3190468138462996e-17lf;
    return _f64_scale2(_f64_exp_core(t.x, tl), i32(k));
}

// Rz(z) ~ (2 atanh(s)/s - 2) / z, z = s^2 in [0, 0.02945] (s = t/(2+t), error 2.1e-18, degree 7).
fn _f64_poly_log(z: f64) -> f64 {
    var p = 0.1308723619665962lf;
    p = fma(p, z, 0.13268714792348096lf);
    p = fma(p, z, 0.15386241881938595lf);
    p = fma(p, z, 0.18181795600060793lf);
    p = fma(p, z, 0.22222222392089008lf);
    p = fma(p, z, 0.28571428570801954lf);
    p = fma(p, z, 0.4000000000000088lf);
    return fma(p, z, 0.6666666666666666lf);
}

// For finite x > 0 (subnormals included): log(x) = e*ln2 + h + l, returned as (e, h, l) with
// x = 2^e * (1 + t), 1 + t in [sqrt(1/2), sqrt(2)), h + l = log(1 + t) to ~2^-60 relative.
// log(1+t) = 2 atanh(s) = t - t^2/2 + s (t^2/2 + R(s^2)), s = t / (2 + t).
fn _f64_log_parts(x: f64) -> vec3<f64> {
    var bits = bitcast<u64>(x);
    var e = i32(bits >> 52u) - 1023;
    if ((bits >> 52u) == 0lu) {
        // subnormal: x = m * 2^-1074 with the integer m < 2^52 converted exactly
        bits = bitcast<u64>(f64(bits));
        e = i32(bits >> 52u) - 1023 - 1074;
    }
    var f = bitcast<f64>(((bits << 12u) >> 12u) + (1023lu << 52u));
    if (f > 1.4142135623730951lf) {
        f = 0.5lf * f;
        e = e + 1;
    }
    let t = f - 1.0lf;
    let s = t / (2.0lf + t);
    let z = s * s;
    let R = z * _f64_poly_log(z);
    let ts = _f64_split(t);
    let qh = 0.5lf * (ts.x * ts.x);
    let ql = 0.5lf * ((ts.x + ts.x + ts.y) * ts.y);
    let u = _f64_two_sum(t, -qh);
    let lo = (u.y - ql) + s * ((qh + ql) + R);
    return vec3<f64>(f64(e), u.x, _f64_opq(lo));
}

// Natural logarithm.
fn log_f64(x: f64) -> f64 {
    if (_f64_isnan(x)) {
        return x;
    }
    if (x == 0.0lf) {
        return -_f64_inf();
    }
    if (_f64_signbit(x)) {
        return _f64_nan();
    }
    if (!_f64_isfinite(x)) {
        return x;
    }
    let p = _f64_log_parts(x);
    let a = _f64_two_sum(p.x * 0.6931471805598903lf, p.y);
    return a.x + _f64_opq(a.y + (p.z + p.x * 5.497923018708371e-14lf));
}

// Base-2 logarithm (exact for powers of two).
fn log2_f64(x: f64) -> f64 {
    if (_f64_isnan(x)) {
        return x;
    }
    if (x == 0.0lf) {
        return -_f64_inf();
    }
    if (_f64_signbit(x)) {
        return _f64_nan();
    }
    if (!_f64_isfinite(x)) {
        return x;
    }
    let p = _f64_log_parts(x);
    let m = _f64_two_prod(p.y, 1.4426950408889634lf);
    let lo = m.y + (p.y * 2.0355273740931033e-17lf + p.z * 1.4426950408889634lf);
    let a = _f64_two_sum(p.x, m.x);
    return a.x + _f64_opq(a.y + lo);
}

// S(z) ~ (sin(r) - r) / r^3, z = r^2 in [0, 0.62] (error 1.2e-20, degree 6).
fn _f64_poly_sin(z: f64) -> f64 {
    var p = -7.586389554705215e-13lf;
    p = fma(p, z, 1.6058526388142101e-10lf);
    p = fma(p, z, -2.505210619936182e-08lf);
    p = fma(p, z, 2.7557319219243677e-06lf);
    p = fma(p, z, -0.0001984126984126494lf);
    p = fma(p, z, 0.008333333333333331lf);
    return fma(p, z, -0.16666666666666666lf);
}

// C(z) ~ (cos(r) - 1 + r^2/2) / r^4, z = r^2 in [0, 0.62] (error 6.7e-22, degree 6).
fn _f64_poly_cos(z: f64) -> f64 {
    var p = 4.745700902269626e-14lf;
    p = fma(p, z, -1.1470457979362018e-11lf);
    p = fma(p, z, 2.087675577268547e-09lf);
    p = fma(p, z, -2.755731922134973e-07lf);
    p = fma(p, z, 2.4801587301584578e-05lf);
    p = fma(p, z, -0.0013888888888888887lf);
    return fma(p, z, 0.041666666666666664lf);
}

// sin and cos of r = rh + rl (|r| <= pi/4 + tiny) as unnormalised pairs:
// (sin_hi, sin_lo, cos_hi, cos_lo). r^2 is formed exactly (Dekker square).
fn _f64_sincos_core(rh: f64, rl: f64) -> vec4<f64> {
    let zz = _f64_two_prod(rh, rh);
    let zh = zz.x;
    let zl = zz.y;
    // sin(r) = rh + rh*z*S(z) + rl*cos(rh)
    let slo = rh * (zh * _f64_poly_sin(zh) - zl * 0.16666666666666666lf) + rl * (1.0lf - 0.5lf * zh);
    // cos(r) = (1 - z/2) + z^2 C(z) - rl*sin(rh); 1 - zh/2 split exactly
    let w = _f64_fast_two_sum(1.0lf, -0.5lf * zh);
    let clo = (w.y - 0.5lf * zl) + (zh * zh * _f64_poly_cos(zh) - rh * rl);
    return vec4<f64>(rh, _f64_opq(slo), w.x, _f64_opq(clo));
}

// Bits b .. b+31 of the table [64 zero bits, then the binary fraction of 2/pi] (b <= 1216).
fn _f64_two_over_pi_bits(b: u32) -> u32 {
    const T = array<u32, 39>(
        0x00000000u, 0x00000000u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
        0x3c439041u, 0xfe5163abu, 0xdebbc561u, 0xb7246e3au, 0x424dd2e0u, 0x06492eeau, 0x09d1921cu,
        0xfe1deb1cu, 0xb129a73eu, 0xe88235f5u, 0x2ebb4484u, 0xe99c7026u, 0xb45f7e41u, 0x3991d639u,
        0x835339f4u, 0x9c845f8bu, 0xbdf9283bu, 0x1ff897ffu, 0xde05980fu, 0xef2f118bu, 0x5a0a6d1fu,
        0x6d367ecfu, 0x27cb09b7u, 0x4f463f66u, 0x9e5fea2du, 0x7527bac7u, 0xebe5f17bu, 0x3d0739f7u,
        0x8a5292eau, 0x6bfb5fb1u, 0x1f8d5d08u, 0x56033046u);
    let wi = b >> 5u;
    let v = (u64(T[wi]) << 32u) | u64(T[wi + 1u]);
    return u32((v << (b & 31u)) >> 32u);
}

// Payne-Hanek reduction for finite |x| >= 2^21: x = k*pi/2 + r, |r| <= pi/4, returned as
// (r_hi, r_lo, k') with k' = k mod 4 (up to sign). |x| = m * 2^ex, m a 53-bit integer; only the
// bits of 2/pi from position ex-1 on matter mod 4, so x*2/pi mod 4 = (m * W mod 2^192) * 2^-190
// with W the 192 bits of 2/pi from there; the product is formed in 32-bit limbs.
fn _f64_rem_pio2_large(x: f64) -> vec3<f64> {
    let bits = bitcast<u64>(x);
    let ex = i32((bits << 1u) >> 53u) - 1075;
    let m = ((bits << 12u) >> 12u) + (1lu << 52u);
    let m0 = u64(u32(m));
    let m1 = m >> 32u;
    // window bit j0 = ex - 1 of 2/pi sits at table bit (j0 - 1) + 64
    let b = u32(ex + 62);
    var w: array<u64, 6>;  // little-endian 32-bit limbs of W
    for (var k = 0u; k < 6u; k = k + 1u) {
        w[5u - k] = u64(_f64_two_over_pi_bits(b + 32u * k));
    }
    var p: array<u32, 6>;  // m * W mod 2^192
    var carry = 0lu;
    for (var i = 0u; i < 6u; i = i + 1u) {
        let a0 = m0 * w[i];
        var a1 = 0lu;
        if (i > 0u) {
            a1 = m1 * w[i - 1u];
        }
        let acc = carry + u64(u32(a0)) + u64(u32(a1));
        p[i] = u32(acc);
        carry = (acc >> 32u) + (a0 >> 32u) + (a1 >> 32u);
    }
    // quadrant = bits 190..191, fraction = bits 0..189 (the top 158 of them are used)
    var q = i32(p[5] >> 30u);
    var c1 = f64(p[5] & 0x3fffffffu) * 9.313225746154785e-10lf;
    if (c1 >= 0.5lf) {
        c1 = c1 - 1.0lf;
        q = q + 1;
    }
    let s1 = _f64_two_sum(c1, f64(p[4]) * 2.168404344971009e-19lf);
    let s2 = _f64_two_sum(s1.x, f64(p[3]) * 5.048709793414476e-29lf);
    let s3 = _f64_two_sum(s2.x, f64(p[2]) * 1.1754943508222875e-38lf);
    let fl = ((s1.y + s2.y) + s3.y) + f64(p[1]) * 2.7369110631344083e-48lf;
    let f = _f64_fast_two_sum(s3.x, fl);
    // r = f * pi/2
    let pr = _f64_two_prod(f.x, 1.5707963267948966lf);
    let r = _f64_fast_two_sum(pr.x, pr.y + (f.x * 6.123233995736766e-17lf + f.y * 1.5707963267948966lf));
    if (x < 0.0lf) {
        return vec3<f64>(-r.x, -r.y, f64(-q));
    }
    return vec3<f64>(r.x, r.y, f64(q));
}

// x = k*pi/2 + r for finite x: returns (r_hi, r_lo, k) with |r| <= pi/4 (+ rounding), r to about
// 2^-100 relative; only k mod 4 is meaningful. |x| < 2^21: Cody-Waite with pi/2 split into
// 32 + 32 + 32 + 53 bits (k*P1, k*P2, k*P3 exact for |k| < 2^21); beyond: Payne-Hanek.
fn _f64_rem_pio2(x: f64) -> vec3<f64> {
    let ax = abs(x);
    if (ax <= 0.7853981633974483lf) {
        return vec3<f64>(x, 0.0lf, 0.0lf);
    }
    if (ax < 2097152.0lf) {
        let k = round(x * 0.6366197723675814lf);
        let a = _f64_opq(x - k * 1.5707963267341256lf);
        let b = _f64_two_sum(a, -(k * 6.077100506303966e-11lf));
        let c = _f64_two_sum(b.x, -(k * 2.0222662487111665e-21lf));
        let r = _f64_fast_two_sum(c.x, (c.y + b.y) - k * 8.4784276603689e-32lf);
        return vec3<f64>(r.x, r.y, k);
    }
    return _f64_rem_pio2_large(x);
}

// Sine (any finite x; inf/NaN -> NaN).
fn sin_f64(x: f64) -> f64 {
    let ax = abs(x);
    if (!_f64_isfinite(x)) {
        return _f64_nan();
    }
    if (ax < 1.4901161193847656e-08lf) {
        return x;
    }
    let red = _f64_rem_pio2(x);
    let sc = _f64_sincos_core(red.x, red.y);
    let q = i32(red.z) & 3;
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
fn cos_f64(x: f64) -> f64 {
    let ax = abs(x);
    if (!_f64_isfinite(x)) {
        return _f64_nan();
    }
    let red = _f64_rem_pio2(x);
    let sc = _f64_sincos_core(red.x, red.y);
    let q = i32(red.z) & 3;
    var v = sc.z + sc.w;
    if ((q & 1) != 0) {
        v = sc.x + sc.y;
    }
    if (q == 1 || q == 2) {
        v = -v;
    }
    return v;
}

// Tangent (any finite x; inf/NaN -> NaN): sin/cos or -cos/sin as a double-double quotient.
fn tan_f64(x: f64) -> f64 {
    let ax = abs(x);
    if (!_f64_isfinite(x)) {
        return _f64_nan();
    }
    if (ax < 7.450580596923828e-09lf) {
        return x;
    }
    let red = _f64_rem_pio2(x);
    let sc = _f64_sincos_core(red.x, red.y);
    let s = _f64_fast_two_sum(sc.x, sc.y);
    let c = _f64_fast_two_sum(sc.z, sc.w);
    if ((i32(red.z) & 1) == 0) {
        let t = _f64_dd_div(s.x, s.y, c.x, c.y);
        return t.x + t.y;
    }
    let t = _f64_dd_div(c.x, c.y, s.x, s.y);
    return -(t.x + t.y);
}

// P(z) ~ (asin(s) - s) / s^3, z = s^2 in [0, 0.25] (error 9.8e-19, degree 13).
fn _f64_poly_asin(z: f64) -> f64 {
    var p = 0.02961201126495512lf;
    p = fma(p, z, -0.01924167174674304lf);
    p = fma(p, z, 0.019554513336123378lf);
    p = fma(p, z, 0.0030448799094556773lf);
    p = fma(p, z, 0.009319560794767446lf);
    p = fma(p, z, 0.009621842970100282lf);
    p = fma(p, z, 0.011566459612121669lf);
    p = fma(p, z, 0.01396378001220357lf);
    p = fma(p, z, 0.017352816540325496lf);
    p = fma(p, z, 0.02237215744350722lf);
    p = fma(p, z, 0.03038194447553234lf);
    p = fma(p, z, 0.044642857142551895lf);
    p = fma(p, z, 0.07500000000000118lf);
    return fma(p, z, 0.16666666666666666lf);
}

// sqrt(z) as (hi, lo) for z >= 2^-900 or z == 0: one correction step of the builtin sqrt.
fn _f64_sqrt_dd(z: f64) -> vec2<f64> {
    let s = sqrt(z);
    if (s == 0.0lf) {
        return vec2<f64>(s, 0.0lf);
    }
    let sq = _f64_two_prod(s, s);
    return vec2<f64>(s, _f64_opq((_f64_opq(z - sq.x) - sq.y) / (s + s)));
}

// Arcsine: |x| <= 1/2: x + x^3 P(x^2); beyond: pi/2 - 2 asin(sqrt((1-|x|)/2)). |x| > 1 -> NaN.
fn asin_f64(x: f64) -> f64 {
    let a = abs(x);
    if (_f64_isnan(x) || a > 1.0lf) {
        return _f64_nan();
    }
    if (a < 1.4901161193847656e-08lf) {
        return x;
    }
    if (a <= 0.5lf) {
        let z = x * x;
        return x + _f64_opq(x * (z * _f64_poly_asin(z)));
    }
    let z = 0.5lf * (1.0lf - a);
    let s = _f64_sqrt_dd(z);
    let t = s.y + s.x * (z * _f64_poly_asin(z));
    let h = _f64_two_sum(1.5707963267948966lf, -2.0lf * s.x);
    let v = h.x + _f64_opq(h.y + (6.123233995736766e-17lf - 2.0lf * t));
    return _f64_copysign(v, x);
}

// Arccosine: |x| <= 1/2: pi/2 - asin(x); x > 1/2: 2 asin(sqrt((1-x)/2));
// x < -1/2: pi - 2 asin(sqrt((1+x)/2)). |x| > 1 -> NaN.
fn acos_f64(x: f64) -> f64 {
    let a = abs(x);
    if (_f64_isnan(x) || a > 1.0lf) {
        return _f64_nan();
    }
    if (a <= 0.5lf) {
        let z = x * x;
        let h = _f64_two_sum(1.5707963267948966lf, -x);
        return h.x + _f64_opq(h.y + (6.123233995736766e-17lf - x * (z * _f64_poly_asin(z))));
    }
    let z = 0.5lf * (1.0lf - a);
    let s = _f64_sqrt_dd(z);
    let t = s.y + s.x * (z * _f64_poly_asin(z));
    if (x > 0.0lf) {
        return 2.0lf * s.x + _f64_opq(2.0lf * t);
    }
    let h = _f64_two_sum(3.141592653589793lf, -2.0lf * s.x);
    return h.x + _f64_opq(h.y + (1.2246467991473532e-16lf - 2.0lf * t));
}

// A(z) ~ (atan(t) - t) / t^3, z = t^2 in [0, 0.1915] (|t| <= 7/16; error 3.9e-18, degree 11).
fn _f64_poly_atan(z: f64) -> f64 {
    var p = 0.01476642155379467lf;
    p = fma(p, z, -0.033121323310643644lf);
    p = fma(p, z, 0.044919637149159995lf);
    p = fma(p, z, -0.05216607416783708lf);
    p = fma(p, z, 0.0587693549653035lf);
    p = fma(p, z, -0.06666240859375808lf);
    p = fma(p, z, 0.0769228548876496lf);
    p = fma(p, z, -0.09090908353049669lf);
    p = fma(p, z, 0.11111111096587765lf);
    p = fma(p, z, -0.1428571428556615lf);
    p = fma(p, z, 0.19999999999999407lf);
    return fma(p, z, -0.3333333333333333lf);
}

// atan(n / d) in [0, pi/2] as (hi, lo) for finite n, d >= 0, not both 0. The ratio a = n/d is
// never rounded: with c in {0, 1/2, 1, 3/2, inf} chosen by a, t = (a - c)/(1 + a c) is formed
// from n and d directly (numerator and denominator as exact sums), |t| <= 7/16, and
// atan(a) = atan(c) + atan(t).
fn _f64_atan_core(n0: f64, d0: f64) -> vec2<f64> {
    var n = n0;
    var d = d0;
    let mx = max(n, d);
    if (mx > 1.0715086071862673e+301lf) {
        n = n * 0.00390625lf;
        d = d * 0.00390625lf;
    } else if (mx < 1.1830521861667747e-271lf) {
        n = n * 4.149515568880993e+180lf;
        d = d * 4.149515568880993e+180lf;
    }
    var num = vec2<f64>(n, 0.0lf);
    var den = vec2<f64>(d, 0.0lf);
    var base = vec2<f64>(0.0lf, 0.0lf);
    if (n < 0.4375lf * d) {
        // c = 0
    } else if (n < 0.6875lf * d) {
        // c = 1/2: (2n - d) / (2d + n), 2n - d exact
        num = vec2<f64>(2.0lf * n - d, 0.0lf);
        den = _f64_two_sum(2.0lf * d, n);
        base = vec2<f64>(0.4636476090008061lf, 2.2698777452961687e-17lf);
    } else if (n < 1.1875lf * d) {
        // c = 1: (n - d) / (n + d), n - d exact
        num = vec2<f64>(n - d, 0.0lf);
        den = _f64_two_sum(n, d);
        base = vec2<f64>(0.7853981633974483lf, 3.061616997868383e-17lf);
    } else if (n < 2.4375lf * d) {
        // c = 3/2: (2n - 3d) / (2d + 3n)
        let d3 = _f64_two_sum(2.0lf * d, d);
        num = _f64_two_sum(2.0lf * n - d3.x, -d3.y);
        let n3 = _f64_two_sum(2.0lf * n, n);
        let s = _f64_two_sum(2.0lf * d, n3.x);
        den = _f64_fast_two_sum(s.x, s.y + n3.y);
        base = vec2<f64>(0.982793723247329lf, 1.3903311031230998e-17lf);
    } else {
        // c = inf: pi/2 + atan(-d/n)
        num = vec2<f64>(-d, 0.0lf);
        den = vec2<f64>(n, 0.0lf);
        base = vec2<f64>(1.5707963267948966lf, 6.123233995736766e-17lf);
    }
    let t = _f64_dd_div(num.x, num.y, den.x, den.y);
    let z = t.x * t.x;
    let h = _f64_two_sum(base.x, t.x);
    let lo = (h.y + base.y) + (t.x * (z * _f64_poly_atan(z)) + t.y * (1.0lf - z));
    return vec2<f64>(h.x, _f64_opq(lo));
}

// Arctangent (+-inf -> +-pi/2).
fn atan_f64(x: f64) -> f64 {
    if (_f64_isnan(x)) {
        return x;
    }
    let a = abs(x);
    if (a < 7.450580596923828e-09lf) {
        return x;
    }
    if (a > 1.152921504606847e+18lf) {
        return _f64_copysign(1.5707963267948966lf, x);
    }
    let r = _f64_atan_core(a, 1.0lf);
    return _f64_copysign(r.x + r.y, x);
}

// Angle of the point (x, y) in [-pi, pi], with the C99/NumPy rules for zeros, infinities, NaN.
fn atan2_f64(y: f64, x: f64) -> f64 {
    if (_f64_isnan(x)) {
        return x;
    }
    if (_f64_isnan(y)) {
        return y;
    }
    let ax = abs(x);
    let ay = abs(y);
    let xneg = _f64_signbit(x);
    let inf = _f64_inf();
    if (ay == 0.0lf) {
        if (xneg) {
            return _f64_copysign(3.141592653589793lf, y);
        }
        return y;
    }
    if (ay == inf) {
        if (ax == inf) {
            return _f64_copysign(select(0.7853981633974483lf, 2.356194490192345lf, xneg), y);
        }
        return _f64_copysign(1.5707963267948966lf, y);
    }
    if (ax == inf) {
        return _f64_copysign(select(0.0lf, 3.141592653589793lf, xneg), y);
    }
    if (ax == 0.0lf) {
        return _f64_copysign(1.5707963267948966lf, y);
    }
    let r = _f64_atan_core(ay, ax);
    var v = r.x + r.y;
    if (xneg) {
        let h = _f64_two_sum(3.141592653589793lf, -r.x);
        v = h.x + _f64_opq(h.y + (1.2246467991473532e-16lf - r.y));
    }
    return _f64_copysign(v, y);
}
