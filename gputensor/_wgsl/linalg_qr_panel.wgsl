// Householder QR of an mp x jb panel (LAPACK's geqr2, jb <= 32), one workgroup, in global
// memory: element (i, j) of the panel is A[a_first + i * ld + j]. R's part goes on and above the
// diagonal, the reflectors' tails (v[0] = 1) below it, tau_c to Tb[t_first + c * 33]; the
// reflectors are also written out explicitly (unit diagonal, zeros above) to
// V[v_first + i * v_ld + j] for the blocked updates. Invocation lid = rs * 32 + qq takes column
// qq of the panel and rows rs, rs + RS, ... in the reflector updates. FUSED: the squared norm of
// the next column's tail is summed in the update of its values (per row slice, in nrm), not by
// another pass over the column, and a reflector's tail is scaled during the next column's step
// (the sums and updates of its own step take the unscaled tail times the scale).
//#include common

// Complex elements (vec2): zgeqr2's reflectors (H = I - tau v v^H, beta real, A := H^H A)
// with the sc_* helpers of linalg_scalar_*.

alias T = {{T}};
alias R = {{R}};
const WG: u32 = {{WG}}u;
const NB: u32 = 32u;
const RS: u32 = WG / NB;
const U: u32 = 8u;

struct Params {
    a_first: u32, ld: u32, mp: u32, jb: u32,
    v_first: u32, v_ld: u32, t_first: u32, p0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> A: array<T>;
@group(0) @binding(2) var<storage, read_write> V: array<T>;
@group(0) @binding(3) var<storage, read_write> Tb: array<T>;

const FUSED: bool = {{FUSED}};

var<workgroup> red: array<T, WG>;
var<workgroup> wv: array<T, NB>;
var<workgroup> nrm: array<R, RS>;
var<workgroup> scl: array<T, NB>;

fn reduce_sum(lid: u32) {
    workgroupBarrier();
    // a binary step where WG is not a power of four, then steps of four
    var s = WG;
    if (WG & 0x55555555u) == 0u {
        s = WG / 2u;
        if lid < s {
            red[lid] = red[lid] + red[lid + s];
        }
        workgroupBarrier();
    }
    for (s = s / 4u; s > 0u; s = s / 4u) {
        if lid < s {
            red[lid] = (red[lid] + red[lid + s]) + (red[lid + 2u * s] + red[lid + 3u * s]);
        }
        workgroupBarrier();
    }
}

{{SCALAR}}

@compute @workgroup_size({{WG}})
fn main(@builtin(local_invocation_index) lid: u32) {
    let mp = p.mp;
    let jb = p.jb;
    let a0 = p.a_first;
    let ld = p.ld;
    let qq = lid % NB;
    let rs = lid / NB;
    for (var c = 0u; c < jb; c++) {
        var xn2 = R(0);
        if FUSED && c > 0u {
            // the squares of the column's tail, summed per row slice by the previous update
            for (var r = 0u; r < RS; r++) {
                xn2 = xn2 + nrm[r];
            }
        } else {
            var s = R(0);
            for (var i = c + 1u + lid; i < mp; i += WG) {
                s = s + sc_abs2(A[a0 + i * ld + c]);
            }
            red[lid] = sc_from(s);
            reduce_sum(lid);
            xn2 = sc_re(red[0]);
        }
        let alpha = A[a0 + c * ld + c];
        workgroupBarrier();
        var tau = T(0);
        var scale = sc_from(R(1));
        let ar = sc_re(alpha);
        if xn2 != R(0) || sc_abs2(alpha - sc_from(ar)) != R(0) {
            let norm = sqrt(sc_abs2(alpha) + xn2);
            let beta = select(-norm, norm, ar < R(0));
            tau = (sc_from(beta) - alpha) / beta;
            scale = sc_div(sc_from(R(1)), alpha - sc_from(beta));
            if !FUSED {
                for (var i = c + 1u + lid; i < mp; i += WG) {
                    A[a0 + i * ld + c] = sc_mul(A[a0 + i * ld + c], scale);
                }
            }
            if lid == 0u {
                A[a0 + c * ld + c] = sc_from(beta);
            }
        }
        if lid == 0u {
            Tb[p.t_first + c * (NB + 1u)] = tau;
            scl[c] = scale;
        }
        storageBarrier();
        workgroupBarrier();
        let live = qq > c && qq < jb;
        var part = T(0);
        if live {
            // U rows at a time: their loads are independent and issued together
            var i = c + 1u + rs;
            for (; i + (U - 1u) * RS < mp; i += U * RS) {
                var xs: array<T, U>;
                var ys: array<T, U>;
                //#unroll
                for (var u = 0u; u < U; u++) {
                    xs[u] = A[a0 + (i + u * RS) * ld + c];
                    ys[u] = A[a0 + (i + u * RS) * ld + qq];
                }
                //#unroll
                for (var u = 0u; u < U; u++) {
                    part = part + sc_dotc(xs[u], ys[u]);
                }
            }
            for (; i < mp; i += RS) {
                part = part + sc_dotc(A[a0 + i * ld + c], A[a0 + i * ld + qq]);
            }
        }
        if FUSED && c > 0u && qq == c - 1u {
            // the previous reflector's tail scaled, which no step from here reads
            let sp = scl[c - 1u];
            for (var i = c + rs; i < mp; i += RS) {
                A[a0 + i * ld + c - 1u] = sc_mul(A[a0 + i * ld + c - 1u], sp);
            }
        }
        red[lid] = part;
        workgroupBarrier();
        if lid < NB && lid > c && lid < jb {
            var s = T(0);
            for (var r = 0u; r < RS; r++) {
                s = s + red[r * NB + lid];
            }
            if FUSED {
                s = sc_mul(sc_conj(scale), s);  // (the sums of the unscaled tail)
            }
            wv[lid] = sc_mul(A[a0 + c * ld + lid] + s, sc_conj(tau));
        }
        workgroupBarrier();
        if live {
            var w = wv[qq];
            let wh = w;
            if FUSED {
                w = sc_mul(w, scale);  // (times the unscaled tail)
            }
            if rs == 0u {
                A[a0 + c * ld + qq] = A[a0 + c * ld + qq] - wh;
            }
            // (the next column's tail: rows from c + 2, summed per row slice for its norm)
            var sq = R(0);
            let head = c + 1u;
            var i = c + 1u + rs;
            for (; i + (U - 1u) * RS < mp; i += U * RS) {
                var xs: array<T, U>;
                var ys: array<T, U>;
                //#unroll
                for (var u = 0u; u < U; u++) {
                    xs[u] = A[a0 + (i + u * RS) * ld + c];
                    ys[u] = A[a0 + (i + u * RS) * ld + qq];
                }
                //#unroll
                for (var u = 0u; u < U; u++) {
                    let y = ys[u] - sc_mul(w, xs[u]);
                    A[a0 + (i + u * RS) * ld + qq] = y;
                    if i + u * RS > head {
                        sq = sq + sc_abs2(y);
                    }
                }
            }
            for (; i < mp; i += RS) {
                let y = A[a0 + i * ld + qq] - sc_mul(w, A[a0 + i * ld + c]);
                A[a0 + i * ld + qq] = y;
                if i > head {
                    sq = sq + sc_abs2(y);
                }
            }
            if FUSED && qq == head {
                nrm[rs] = sq;
            }
        }
        storageBarrier();
        workgroupBarrier();
    }
    if FUSED && jb > 0u && qq == jb - 1u {
        let sp = scl[jb - 1u];
        for (var i = jb + rs; i < mp; i += RS) {
            A[a0 + i * ld + jb - 1u] = sc_mul(A[a0 + i * ld + jb - 1u], sp);
        }
    }
    storageBarrier();
    workgroupBarrier();
    for (var e = lid; e < mp * jb; e += WG) {
        let i = e / jb;
        let j = e % jb;
        var v = A[a0 + i * ld + j];
        if i == j {
            v = sc_from(R(1));
        } else if i < j {
            v = T(0);
        }
        V[p.v_first + i * p.v_ld + j] = v;
    }
}
