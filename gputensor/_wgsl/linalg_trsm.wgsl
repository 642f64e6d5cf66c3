// Triangular solve on the left, one invocation per right-hand column: X := op(T)^-1 X for an
// n x n triangle (n <= NB, 32 or 64) T[t_first + i * t_ld + j] and an n x k block X whose element (r, c)
// is X[x_first + r * x_rs + c * x_cs]. MODE 0: unit lower (forward), 1: lower (forward),
// 2: upper (backward). T and X may be bindings of one buffer when their regions are disjoint.
//#include common

alias T = {{T}};
const NB: u32 = {{NB}}u;
const MODE: u32 = {{MODE}}u;
const WG: u32 = {{WG}}u;

struct Params {
    n: u32, k: u32, t_first: u32, t_ld: u32,
    x_first: u32, x_rs: u32, x_cs: u32, p0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Tm: array<T>;
@group(0) @binding(2) var<storage, read_write> X: array<T>;

var<workgroup> t: array<T, NB * NB>;
// column lid of the block: x[r * WG + lid]
var<workgroup> x: array<T, NB * WG>;

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = p.n;
    for (var e = lid; e < n * n; e += WG) {
        let i = e / n;
        let j = e % n;
        t[i * NB + j] = Tm[p.t_first + i * p.t_ld + j];
    }
    workgroupBarrier();
    let col = linear_group(wid, nwg) * WG + lid;
    if col >= p.k {
        return;
    }
    let base = p.x_first + col * p.x_cs;
    for (var r = 0u; r < n; r++) {
        x[r * WG + lid] = X[base + r * p.x_rs];
    }
    if MODE == 2u {
        for (var ii = 0u; ii < n; ii++) {
            let i = n - 1u - ii;
            var s = x[i * WG + lid];
            for (var q = i + 1u; q < n; q++) {
                s = s - t[i * NB + q] * x[q * WG + lid];
            }
            x[i * WG + lid] = s / t[i * NB + i];
        }
    } else {
        for (var i = 0u; i < n; i++) {
            var s = x[i * WG + lid];
            for (var q = 0u; q < i; q++) {
                s = s - t[i * NB + q] * x[q * WG + lid];
            }
            if MODE == 1u {
                s = s / t[i * NB + i];
            }
            x[i * WG + lid] = s;
        }
    }
    for (var r = 0u; r < n; r++) {
        X[base + r * p.x_rs] = x[r * WG + lid];
    }
}
