// Helpers shared by the attention kernels (pulled in with `//#include attention_common`); they use
// the alias T (the compute type) of the including kernel.

// 2^x for x <= 0, accurate to about one ulp in f64 (GLSL.std.450, hence Vulkan, has exp2 for 16-
// and 32-bit floats only). x = n + f with n an integer and |f| <= 1/2; 2^f = e^(f ln 2) by its
// Taylor series to degree 14 (truncation error below 2e-17); results under 2^-1020 flush to 0.
fn exp2_poly(x: T) -> T {
    let n = floor(max(x, T(-2000.0)) + T(0.5));
    if (n < T(-1020.0)) {
        return T(0.0);
    }
    let r = (x - n) * T(0.6931471805599453094);
    var p = T(1.0 / 87178291200.0);
    p = p * r + T(1.0 / 6227020800.0);
    p = p * r + T(1.0 / 479001600.0);
    p = p * r + T(1.0 / 39916800.0);
    p = p * r + T(1.0 / 3628800.0);
    p = p * r + T(1.0 / 362880.0);
    p = p * r + T(1.0 / 40320.0);
    p = p * r + T(1.0 / 5040.0);
    p = p * r + T(1.0 / 720.0);
    p = p * r + T(1.0 / 120.0);
    p = p * r + T(1.0 / 24.0);
    p = p * r + T(1.0 / 6.0);
    p = p * r + T(0.5);
    p = p * r + T(1.0);
    p = p * r + T(1.0);
    return ldexp(p, i32(n));
}
