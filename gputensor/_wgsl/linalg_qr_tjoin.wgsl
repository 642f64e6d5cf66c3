// The triangular factor of two consecutive block reflectors as one (LAPACK's larft by blocks):
// I - V1 T1 V1^H and I - V2 T2 V2^H (V1: 32 columns, V2: jb2 <= 32 columns after them) make
// I - V T V^H with V = [V1 V2] and T = [T1, -T1 G12 T2; 0, T2], G12 = V1^H V2. T1, T2 are the
// 32 x 32 upper triangles at Tb[t1_first + i * 32 + j], Tb[t2_first + ...] (zeros below, as
// linalg_qr_tmat writes them), G12 the 32 x jb2 block at G[g_first + i * jb2 + j]; T goes to
// O[o_first + i * OB + j], OB x OB with zeros outside its (32 + jb2)-square upper triangle.
// One workgroup; the products in workgroup memory.

// Complex elements (vec2): the sc_* helpers of linalg_scalar_*.

alias T = {{T}};
alias R = {{R}};
const NB: u32 = 32u;
const OB: u32 = 64u;
const WG: u32 = 256u;
const PER: u32 = 4u;  // NB * NB / WG

struct Params {
    jb2: u32, t1_first: u32, t2_first: u32, g_first: u32,
    o_first: u32, p0: u32, p1: u32, p2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Tb: array<T>;
@group(0) @binding(2) var<storage, read> G: array<T>;
@group(0) @binding(3) var<storage, read_write> O: array<T>;

var<workgroup> tt: array<T, NB * NB>;
var<workgroup> gx: array<T, NB * NB>;

{{SCALAR}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    let jb2 = p.jb2;
    for (var e = lid; e < NB * NB; e += WG) {
        let i = e / NB;
        let j = e % NB;
        var t2 = T(0);
        var g12 = T(0);
        if i < jb2 && j < jb2 {
            t2 = Tb[p.t2_first + e];
        }
        if j < jb2 {
            g12 = G[p.g_first + i * jb2 + j];
        }
        tt[e] = t2;
        gx[e] = g12;
    }
    workgroupBarrier();
    // X = G12 T2 (T2 upper triangular)
    var xv: array<T, PER>;
    //#unroll
    for (var r = 0u; r < 4u; r++) {
        let e = lid + r * WG;
        let i = e / NB;
        let j = e % NB;
        var s = T(0);
        for (var q = 0u; q <= j; q++) {
            s = s + sc_mul(gx[i * NB + q], tt[q * NB + j]);
        }
        xv[r] = s;
    }
    // T2 and the zero block below T1 (O's rows from 32; rows below 32 + jb2 are zeros too)
    for (var e = lid; e < NB * OB; e += WG) {
        let i = NB + e / OB;
        let j = e % OB;
        var v = T(0);
        if j >= NB {
            v = tt[(i - NB) * NB + j - NB];
        }
        O[p.o_first + i * OB + j] = v;
    }
    workgroupBarrier();
    //#unroll
    for (var r = 0u; r < 4u; r++) {
        gx[lid + r * WG] = xv[r];
    }
    for (var e = lid; e < NB * NB; e += WG) {
        tt[e] = Tb[p.t1_first + e];
    }
    workgroupBarrier();
    // T12 = -T1 X (T1 upper triangular), T1 itself
    //#unroll
    for (var r = 0u; r < 4u; r++) {
        let e = lid + r * WG;
        let i = e / NB;
        let j = e % NB;
        var s = T(0);
        for (var q = i; q < NB; q++) {
            s = s + sc_mul(tt[i * NB + q], gx[q * NB + j]);
        }
        O[p.o_first + i * OB + NB + j] = T(0) - s;
        O[p.o_first + i * OB + j] = tt[e];
    }
}
