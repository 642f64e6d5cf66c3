// Copy of a rows x cols block of each of `count` matrices: D[d_first + q * d_bs + i * d_ld + j]
// = S[s_first + q * s_bs + i * s_ld + j], one invocation per element (linear id over a folded
// grid of WG-invocation groups).
//#include common

alias T = {{T}};
const WG: u32 = 256u;

struct Params {
    rows: u32, cols: u32, s_first: u32, s_ld: u32, d_first: u32, d_ld: u32,
    s_bs: u32, d_bs: u32, count: u32, p0: u32, p1: u32, p2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> S: array<T>;
@group(0) @binding(2) var<storage, read_write> D: array<T>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = linear_group(wid, nwg) * WG + lid;
    let per = p.rows * p.cols;
    if e >= per * p.count {
        return;
    }
    let q = e / per;
    let i = (e % per) / p.cols;
    let j = e % p.cols;
    D[p.d_first + q * p.d_bs + i * p.d_ld + j] = S[p.s_first + q * p.s_bs + i * p.s_ld + j];
}
