// Determinant from an LU factorization (ipiv as getrf's, absolute row indices): the n x n
// factor is A[a_first + i * ld + j], pivots piv[piv_first + i]. Writes R[r_first + 0, 1, 2] =
// det (the diagonal's product in order), sign (0 when singular; complex: det / |det|), log|det|
// (-inf when singular; complex: the real part). Elements are T (real, or complex as vec2) with
// the sc_* helpers of linalg_scalar_*.

alias T = {{T}};
alias R = {{R}};

struct Params { n: u32, a_first: u32, ld: u32, piv_first: u32, r_first: u32, p0: u32, p1: u32, p2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> A: array<T>;
@group(0) @binding(2) var<storage, read_write> piv: array<u32>;
@group(0) @binding(3) var<storage, read_write> Out: array<T>;

{{SCALAR}}

@compute @workgroup_size(1)
fn main() {
    var det = sc_from(R(1));
    var sign = sc_from(R(1));
    var logabs = R(0);
    var zero = false;
    for (var c = 0u; c < p.n; c++) {
        let u = A[p.a_first + c * (p.ld + 1u)];
        det = sc_mul(det, u);
        if piv[p.piv_first + c] != c {
            sign = -sign;
            det = -det;
        }
        if sc_nonzero(u) {
            let au = sc_abs(u);
            sign = sc_mul(sign, u / au);
            logabs = logabs + {{LOG}}(au);
        } else {
            zero = true;
        }
    }
    Out[p.r_first] = det;
    Out[p.r_first + 1u] = select(sign, T(0), zero);
    Out[p.r_first + 2u] = sc_from(select(logabs, {{NEG_INF}}, zero));
}
