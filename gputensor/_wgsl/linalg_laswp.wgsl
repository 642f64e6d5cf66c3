// Row interchanges (LAPACK's laswp): for r in [k1, k2) in order, swap rows r and piv[piv_first + r]
// of X (element (r, c) at X[x_first + r * x_ld + c]; getrf's pivots, piv[r] >= r), in every
// column c < cols outside [skip_lo, skip_hi). One invocation per column; workgroups of z index
// q take matrix q of a stack (X from x_first + q * x_bs, its pivots from piv_first + q * piv_bs).
//
// The swaps go in chunks of 32: invocation 0 composes a chunk's swaps into one permutation of the
// at most 64 rows it touches (dst[s] receives the row that was src[s]); then each invocation
// loads its column's values of those rows at once (independent loads, instead of 32 dependent
// swaps) and stores them permuted.
//#include common

alias T = {{T}};
const WG: u32 = 32u;
const CH: u32 = 32u;

struct Params {
    cols: u32, k1: u32, k2: u32, x_first: u32,
    x_ld: u32, piv_first: u32, skip_lo: u32, skip_hi: u32,
    x_bs: u32, piv_bs: u32, p0: u32, p1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> X: array<T>;
@group(0) @binding(2) var<storage, read> piv: array<u32>;

var<workgroup> dst: array<u32, 2u * CH>;
var<workgroup> src: array<u32, 2u * CH>;
var<workgroup> count: u32;
var<workgroup> vals: array<T, 2u * CH * WG>;

// The slot of `row` among dst[0..m) (appended when new).
fn slot_of(row: u32, m: ptr<function, u32>) -> u32 {
    for (var s = 0u; s < *m; s++) {
        if dst[s] == row {
            return s;
        }
    }
    let s = *m;
    dst[s] = row;
    src[s] = row;
    *m = s + 1u;
    return s;
}

@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let c = linear_group(wid, nwg) * WG + lid;
    let live = c < p.cols && !(c >= p.skip_lo && c < p.skip_hi);
    let base = p.x_first + wid.z * p.x_bs + c;
    let pbase = p.piv_first + wid.z * p.piv_bs;
    for (var c0 = p.k1; c0 < p.k2; c0 += CH) {
        let c1 = min(c0 + CH, p.k2);
        if lid == 0u {
            var m = 0u;
            for (var r = c0; r < c1; r++) {
                let pr = piv[pbase + r];
                if pr != r {
                    let a = slot_of(r, &m);
                    let b = slot_of(pr, &m);
                    let t = src[a];
                    src[a] = src[b];
                    src[b] = t;
                }
            }
            count = m;
        }
        workgroupBarrier();
        let m = count;
        if live {
            for (var s = 0u; s < m; s++) {
                vals[s * WG + lid] = X[base + src[s] * p.x_ld];
            }
            for (var s = 0u; s < m; s++) {
                X[base + dst[s] * p.x_ld] = vals[s * WG + lid];
            }
        }
        workgroupBarrier();
    }
}
