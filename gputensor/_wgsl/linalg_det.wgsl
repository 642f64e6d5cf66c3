// Determinant from an LU factorization (ipiv as getrf's, absolute row indices): the n x n
// factor is A[a_first + i * ld + j], pivots piv[piv_first + i]. Writes R[r_first + 0, 1, 2] =
// det (the diagonal's product with the permutation's sign), sign (0 when singular), log|det|
// (-inf when singular). One workgroup per matrix of a stack (workgroup q: A from
// a_first + q * a_bs, pivots from piv_first + q * piv_bs, R from r_first + 3 q): invocation lid
// takes a run of consecutive diagonal entries, then a tree combines the runs in order. Complex
// elements (vec2): sign det / |det|, log|det| the real part; the sc_* helpers of
// linalg_scalar_*.

alias T = {{T}};
alias R = {{R}};
const WG: u32 = 256u;

struct Params { n: u32, a_first: u32, ld: u32, piv_first: u32, r_first: u32, a_bs: u32, piv_bs: u32, p0: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<T>;
@group(0) @binding(2) var<storage, read> piv: array<u32>;
@group(0) @binding(3) var<storage, read_write> Out: array<T>;

var<workgroup> dets: array<T, WG>;
var<workgroup> signs: array<T, WG>;
var<workgroup> logs: array<R, WG>;
var<workgroup> zeros: array<u32, WG>;

{{SCALAR}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let a_first = p.a_first + wid.x * p.a_bs;
    let piv_first = p.piv_first + wid.x * p.piv_bs;
    let r_first = p.r_first + 3u * wid.x;
    let run = (p.n + WG - 1u) / WG;
    let c0 = min(p.n, lid * run);
    let c1 = min(p.n, c0 + run);
    var det = sc_from(R(1));
    var sign = sc_from(R(1));
    var logabs = R(0);
    var zero = 0u;
    for (var c = c0; c < c1; c++) {
        let u = A[a_first + c * (p.ld + 1u)];
        det = sc_mul(det, u);
        if piv[piv_first + c] != c {
            sign = -sign;
            det = -det;
        }
        if sc_nonzero(u) {
            let au = sc_abs(u);
            sign = sc_mul(sign, sc_unit(u));
            logabs = logabs + {{LOG}}(au);
        } else {
            zero = 1u;
        }
    }
    dets[lid] = det;
    signs[lid] = sign;
    logs[lid] = logabs;
    zeros[lid] = zero;
    workgroupBarrier();
    for (var s = 1u; s < WG; s = s << 1u) {
        if lid % (2u * s) == 0u {
            dets[lid] = sc_mul(dets[lid], dets[lid + s]);
            signs[lid] = sc_mul(signs[lid], signs[lid + s]);
            logs[lid] = logs[lid] + logs[lid + s];
            zeros[lid] = zeros[lid] | zeros[lid + s];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        let z = zeros[0] != 0u;
        Out[r_first] = dets[0];
        Out[r_first + 1u] = select(signs[0], T(0), z);
        Out[r_first + 2u] = sc_from(select(logs[0], {{NEG_INF}}, z));
    }
}
