// Row interchanges (LAPACK's laswp), one invocation per column c of `cols`: for r in [k1, k2)
// in order, swap rows r and piv[piv_first + r] of X (element (r, c) at X[x_first + r * x_ld + c]).
// Columns in [skip_lo, skip_hi) are left alone.
//#include common

alias T = {{T}};
const WG: u32 = 64u;

struct Params {
    cols: u32, k1: u32, k2: u32, x_first: u32,
    x_ld: u32, piv_first: u32, skip_lo: u32, skip_hi: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> X: array<T>;
@group(0) @binding(2) var<storage, read_write> piv: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let c = linear_group(wid, nwg) * WG + lid;
    if c >= p.cols || (c >= p.skip_lo && c < p.skip_hi) {
        return;
    }
    let base = p.x_first + c;
    for (var r = p.k1; r < p.k2; r++) {
        let pr = piv[p.piv_first + r];
        if pr != r {
            let t = X[base + r * p.x_ld];
            X[base + r * p.x_ld] = X[base + pr * p.x_ld];
            X[base + pr * p.x_ld] = t;
        }
    }
}
