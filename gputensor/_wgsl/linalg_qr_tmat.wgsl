// The triangular factor of a block reflector (LAPACK's larft, forward, columnwise):
// H_0 H_1 ... H_{jb-1} = I - V T V^T, from tau (on T's diagonal, Tb[t_first + c * 33]) and the
// Gram matrix G = V^T V (G[g_first + i * jb + j]): T[r][i] = -tau_i * sum_q T[r][q] G[q][i]
// (r <= q < i), G read once into workgroup memory. T is jb x jb upper triangular at
// Tb[t_first + i * 32 + j], zeros below.

// Complex elements (vec2): H = I - V T V^H with G = V^H V (zlarft), the sc_* helpers of
// linalg_scalar_*.

alias T = {{T}};
alias R = {{R}};
const NB: u32 = 32u;

struct Params { jb: u32, t_first: u32, g_first: u32, p0: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> Tb: array<T>;
@group(0) @binding(2) var<storage, read> G: array<T>;

var<workgroup> t: array<T, NB * NB>;
var<workgroup> g: array<T, NB * NB>;

{{SCALAR}}

@compute @workgroup_size(32)
fn main(@builtin(local_invocation_index) lid: u32) {
    let jb = p.jb;
    // every load of G issued before the first store to workgroup memory
    var gv: array<T, NB>;
    //#unroll
    for (var r = 0u; r < NB; r++) {
        let e = r * NB + lid;
        gv[r] = T(0);
        if e < jb * jb {
            gv[r] = G[p.g_first + e];
        }
    }
    for (var e = lid; e < NB * NB; e += NB) {
        t[e] = T(0);
        g[e] = T(0);
    }
    workgroupBarrier();
    //#unroll
    for (var r = 0u; r < NB; r++) {
        let e = r * NB + lid;
        if e < jb * jb {
            g[(e / jb) * NB + e % jb] = gv[r];
        }
    }
    if lid < jb {
        t[lid * (NB + 1u)] = Tb[p.t_first + lid * (NB + 1u)];
    }
    workgroupBarrier();
    for (var i = 1u; i < jb; i++) {
        if lid < i {
            var s = T(0);
            for (var q = lid; q < i; q++) {
                s = s + sc_mul(t[lid * NB + q], g[q * NB + i]);
            }
            t[lid * NB + i] = -sc_mul(t[i * (NB + 1u)], s);
        }
        workgroupBarrier();
    }
    for (var e = lid; e < NB * NB; e += NB) {
        Tb[p.t_first + e] = t[e];
    }
}
