// Determinant from an LU factorization (ipiv as getrf's, absolute row indices): the n x n
// factor is A[a_first + i * ld + j], pivots piv[piv_first + i]. Writes R[r_first + 0, 1, 2] =
// det (the diagonal's product with the permutation's sign), sign (0 when singular), log|det|
// (-inf when singular). One workgroup per matrix of a stack (workgroup q: A from
// a_first + q * a_bs, pivots from piv_first + q * piv_bs, R from r_first + 3 q): invocation lid
// takes a run of consecutive diagonal entries, then a tree combines the runs in order.

alias T = {{T}};
const WG: u32 = 256u;

struct Params { n: u32, a_first: u32, ld: u32, piv_first: u32, r_first: u32, a_bs: u32, piv_bs: u32, p0: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<T>;
@group(0) @binding(2) var<storage, read> piv: array<u32>;
@group(0) @binding(3) var<storage, read_write> R: array<T>;

var<workgroup> dets: array<T, WG>;
var<workgroup> signs: array<T, WG>;
var<workgroup> logs: array<T, WG>;
var<workgroup> zeros: array<u32, WG>;

{{MATH}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let a_first = p.a_first + wid.x * p.a_bs;
    let piv_first = p.piv_first + wid.x * p.piv_bs;
    let r_first = p.r_first + 3u * wid.x;
    let run = (p.n + WG - 1u) / WG;
    let c0 = min(p.n, lid * run);
    let c1 = min(p.n, c0 + run);
    var det = T(1);
    var sign = T(1);
    var logabs = T(0);
    var zero = 0u;
    for (var c = c0; c < c1; c++) {
        let u = A[a_first + c * (p.ld + 1u)];
        det = det * u;
        if piv[piv_first + c] != c {
            sign = -sign;
            det = -det;
        }
        if u < T(0) {
            sign = -sign;
        }
        if u == T(0) {
            zero = 1u;
        } else {
            logabs = logabs + {{LOG}}(abs(u));
        }
    }
    dets[lid] = det;
    signs[lid] = sign;
    logs[lid] = logabs;
    zeros[lid] = zero;
    workgroupBarrier();
    for (var s = 1u; s < WG; s = s << 1u) {
        if lid % (2u * s) == 0u {
            dets[lid] = dets[lid] * dets[lid + s];
            signs[lid] = signs[lid] * signs[lid + s];
            logs[lid] = logs[lid] + logs[lid + s];
            zeros[lid] = zeros[lid] | zeros[lid + s];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        let z = zeros[0] != 0u;
        R[r_first] = dets[0];
        R[r_first + 1u] = select(signs[0], T(0), z);
        R[r_first + 2u] = select(logs[0], {{NEG_INF}}, z);
    }
}
