// The panel step of the blocked Cholesky factorization, for each of `count` matrices whose
// cols x cols diagonal block starts at A[a_first + q * a_bs]: the rows x cols panel
// W[w_first + q * w_bs + i * cols + j] (the factor's block column below the diagonal block,
// computed into scratch) is copied into A below the diagonal block (leading dimension ld), and
// its mirror in the block row right of the diagonal block (cols x rows) is set to 0 (the factor's strict upper triangle); invocation e (linear id
// over a folded grid of WG-invocation groups) copies element e of the panel and clears element e
// of the mirror, both in row-major order. The panel and its mirror are disjoint regions of one
// binding of A.
// Elements are T (real, or complex as vec2).
//#include common

alias T = {{T}};
const WG: u32 = 256u;

struct Params {
    rows: u32, cols: u32, w_first: u32, w_bs: u32, a_first: u32, ld: u32,
    a_bs: u32, count: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> W: array<T>;
@group(0) @binding(2) var<storage, read_write> A: array<T>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = linear_group(wid, nwg) * WG + lid;
    let per = p.rows * p.cols;
    if e >= per * p.count {
        return;
    }
    let q = e / per;
    let r = e % per;
    let top = p.a_first + q * p.a_bs;
    A[top + (p.cols + r / p.cols) * p.ld + r % p.cols] = W[p.w_first + q * p.w_bs + r];
    A[top + p.cols + (r / p.rows) * p.ld + r % p.rows] = T(0);
}
