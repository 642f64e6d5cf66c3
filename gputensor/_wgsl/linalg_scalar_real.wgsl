// Scalar helpers of the linalg kernels for a real element type: T (the element) and R (its real
// type) are the same f32 / f64. linalg_scalar_complex.wgsl has the same functions for complex
// T; a kernel takes one of the two as its SCALAR placeholder (_backend/linalg_scalar.py), so one
// source serves every dtype. The kernel declares `alias T` and `alias R`.

// The element of real value r.
fn sc_from(r: R) -> T { return r; }
// The real part.
fn sc_re(x: T) -> R { return x; }
// The complex conjugate.
fn sc_conj(x: T) -> T { return x; }
// The product.
fn sc_mul(a: T, b: T) -> T { return a * b; }
// conj(a) b: the term of a dot product a^H b.
fn sc_dotc(a: T, b: T) -> T { return a * b; }
// |x|^2.
fn sc_abs2(x: T) -> R { return x * x; }
// |x|.
fn sc_abs(x: T) -> R { return abs(x); }
// |re x| + |im x|: an upper bound of |x| within a factor sqrt(2) (cheap norms and scales).
fn sc_norm1(x: T) -> R { return abs(x); }
// Whether both parts have magnitude at most maxf (finite).
fn sc_finite(x: T, maxf: R) -> bool { return abs(x) <= maxf; }
// The quotient a / b.
fn sc_div(a: T, b: T) -> T { return a / b; }
// Whether x is not zero (NaN is not zero: written as !(x == 0), compilers order x != 0).
fn sc_nonzero(x: T) -> bool { return !(x == T(0)); }
// max(|re x|, |im x|): |x| within a factor sqrt(2), without overflow.
fn sc_maxpart(x: T) -> R { return abs(x); }
// x / |x| for nonzero x: exactly +-1 (a division may round on adapters whose division is not
// correctly rounded); NaN stays NaN where the comparison sees it.
fn sc_unit(x: T) -> T {
    let q = x / abs(x);
    return select(q, select(T(-1), T(1), x > T(0)), q == q);
}
