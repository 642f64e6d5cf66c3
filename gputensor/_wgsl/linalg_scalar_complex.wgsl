// Scalar helpers of the linalg kernels for a complex element type: T is vec2<R> (.x real,
// .y imaginary, as complex.wgsl computes). The same functions as linalg_scalar_real.wgsl (which
// documents them); `{{R}}` is the parts' type (the kernel's R), substituted by
// _backend/linalg_scalar.py, which appends the complex.wgsl functions these call.

fn sc_from(r: R) -> T { return T(r, R(0)); }
fn sc_re(x: T) -> R { return x.x; }
fn sc_conj(x: T) -> T { return cx_conj_{{R}}(x); }
fn sc_mul(a: T, b: T) -> T { return cx_mul_{{R}}(a, b); }
fn sc_dotc(a: T, b: T) -> T { return T(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x); }
fn sc_abs2(x: T) -> R { return x.x * x.x + x.y * x.y; }
fn sc_abs(x: T) -> R { return cx_abs_{{R}}(x); }
fn sc_norm1(x: T) -> R { return abs(x.x) + abs(x.y); }
fn sc_finite(x: T, maxf: R) -> bool { return abs(x.x) <= maxf && abs(x.y) <= maxf; }
fn sc_div(a: T, b: T) -> T { return cx_div_{{R}}(a, b); }
fn sc_nonzero(x: T) -> bool { return !(x.x == R(0) && x.y == R(0)); }
fn sc_maxpart(x: T) -> R { return max(abs(x.x), abs(x.y)); }
fn sc_unit(x: T) -> T { return x / cx_abs_{{R}}(x); }
