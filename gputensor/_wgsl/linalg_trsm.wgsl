// Triangular solve on the left, one invocation per right-hand column: X := op(T)^-1 X for an
// n x n triangle (n <= NB <= 32) T[t_first + i * t_ld + j] and an n x k block X whose element
// (r, c) is X[x_first + r * x_rs + c * x_cs]. MODE 0: unit lower (forward), 1: lower (forward),
// 2: upper (backward). The triangle sits in workgroup memory, each column in registers (the
// substitution unrolled, its triangle only). Workgroups of z index q solve matrix q of a stack (T from
// t_first + q * t_bs, X from x_first + q * x_bs). T and X may be bindings of one buffer when
// their regions are disjoint.
// Elements are T (real, or complex as vec2) with the sc_* helpers of linalg_scalar_*.
//#include common

alias T = {{T}};
alias R = {{R}};
const NB: u32 = {{NB}}u;
const MODE: u32 = {{MODE}}u;
const WG: u32 = {{WG}}u;

struct Params {
    n: u32, k: u32, t_first: u32, t_ld: u32,
    x_first: u32, x_rs: u32, x_cs: u32, t_bs: u32,
    x_bs: u32, p0: u32, p1: u32, p2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Tm: array<T>;
@group(0) @binding(2) var<storage, read_write> X: array<T>;

var<workgroup> t: array<T, NB * NB>;

{{SCALAR}}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = p.n;
    for (var e = lid; e < NB * NB; e += WG) {
        let i = e / NB;
        let j = e % NB;
        var v = T(0);
        if i < n && j < n {
            v = Tm[p.t_first + wid.z * p.t_bs + i * p.t_ld + j];
        }
        t[e] = v;
    }
    workgroupBarrier();
    let col = linear_group(wid, nwg) * WG + lid;
    if col >= p.k {
        return;
    }
    let base = p.x_first + wid.z * p.x_bs + col * p.x_cs;
    var x: array<T, NB>;
    //#unroll
    for (var r = 0u; r < NB; r++) {
        x[r] = T(0);
        if r < n {
            x[r] = X[base + r * p.x_rs];
        }
    }
    if MODE == 2u {
        //#unroll
        for (var ii = 0u; ii < NB; ii++) {
            let i = NB - 1u - ii;
            if i < n {
                var s = x[i];
                //#unroll
                for (var q = NB - ii; q < NB; q++) {
                    s = s - sc_mul(t[i * NB + q], x[q]);
                }
                x[i] = sc_div(s, t[i * NB + i]);
            }
        }
    } else {
        //#unroll
        for (var i = 0u; i < NB; i++) {
            var s = x[i];
            //#unroll
            for (var q = 0u; q < i; q++) {
                s = s - sc_mul(t[i * NB + q], x[q]);
            }
            if MODE == 1u && i < n {
                s = sc_div(s, t[i * NB + i]);
            }
            x[i] = s;
        }
    }
    //#unroll
    for (var r = 0u; r < NB; r++) {
        if r < n {
            X[base + r * p.x_rs] = x[r];
        }
    }
}
