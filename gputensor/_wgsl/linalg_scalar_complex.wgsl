// Scalar helpers of the linalg kernels for a complex element type: T is vec2<TT> (.x real,
// .y imaginary, as complex.wgsl computes), R is TT. The same functions as
// linalg_scalar_real.wgsl (which documents them); TT is the parts' type, substituted by
// _backend/linalg_scalar.py, which appends the complex.wgsl functions these call.

fn sc_from(r: R) -> T { return T(r, R(0)); }
fn sc_re(x: T) -> R { return x.x; }
fn sc_conj(x: T) -> T { return cx_conj_TT(x); }
fn sc_mul(a: T, b: T) -> T { return cx_mul_TT(a, b); }
fn sc_dotc(a: T, b: T) -> T { return T(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x); }
fn sc_abs2(x: T) -> R { return x.x * x.x + x.y * x.y; }
fn sc_abs(x: T) -> R { return cx_abs_TT(x); }
fn sc_norm1(x: T) -> R { return abs(x.x) + abs(x.y); }
fn sc_finite(x: T, maxf: R) -> bool { return abs(x.x) <= maxf && abs(x.y) <= maxf; }
fn sc_div(a: T, b: T) -> T { return cx_div_TT(a, b); }
fn sc_nonzero(x: T) -> bool { return !(x.x == R(0) && x.y == R(0)); }
fn sc_maxpart(x: T) -> R { return max(abs(x.x), abs(x.y)); }
fn sc_unit(x: T) -> T { return x / cx_abs_TT(x); }
