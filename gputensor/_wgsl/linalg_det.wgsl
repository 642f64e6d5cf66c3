// Determinant from an LU factorization (ipiv as getrf's, absolute row indices): the n x n
// factor is A[a_first + i * ld + j], pivots piv[piv_first + i]. Writes R[r_first + 0, 1, 2] =
// det (the diagonal's product in order), sign (0 when singular), log|det| (-inf when singular).

alias T = {{T}};

struct Params { n: u32, a_first: u32, ld: u32, piv_first: u32, r_first: u32, p0: u32, p1: u32, p2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<T>;
@group(0) @binding(2) var<storage, read> piv: array<u32>;
@group(0) @binding(3) var<storage, read_write> R: array<T>;

{{MATH}}

@compute @workgroup_size(1)
fn main() {
    var det = T(1);
    var sign = T(1);
    var logabs = T(0);
    var zero = false;
    for (var c = 0u; c < p.n; c++) {
        let u = A[p.a_first + c * (p.ld + 1u)];
        det = det * u;
        if piv[p.piv_first + c] != c {
            sign = -sign;
            det = -det;
        }
        if u < T(0) {
            sign = -sign;
        }
        if u == T(0) {
            zero = true;
        } else {
            logabs = logabs + {{LOG}}(abs(u));
        }
    }
    R[p.r_first] = det;
    R[p.r_first + 1u] = select(sign, T(0), zero);
    R[p.r_first + 2u] = select(logabs, {{NEG_INF}}, zero);
}
