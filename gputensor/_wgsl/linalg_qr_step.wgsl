// One column step of a Householder QR panel (geqr2 on an mp x jb panel, jb <= 32) over many
// workgroups: element (i, j) of the panel is A[a_first + i * ld + j]; workgroup g takes panel
// rows [g * CH, g * CH + CH), invocation lid = rs * 32 + qq column qq and rows rs, rs + RS, ...
// of them. Step s applies column c = s - 1 (s >= 1) and prepares column s:
//
// * every workgroup reduces the previous step's partial sums (Pin[pin_first + g' * 32 + j],
//   g' < parts: the sums over rows i > c of conj(A[i, c]) A[i, j]) and reads the head row c,
//   which no workgroup writes in this step, to form the reflector (beta, tau, the scale of the
//   tail) and w_j = conj(tau) (A[c, j] + conj(scale) sum_i conj(x_i) A[i, j]);
// * its rows i > c: the tail v_i = scale x_i into column c, A[i, j] -= v_i w_j for j > c;
// * its partial sums of column s (rows i > s) into Pout[pout_first + g * 32 + j];
// * workgroup 0 stores tau into Tb[t_first + c * 33] and R's row c (beta, A[c, j] - w_j) into
//   Rr[r_first + c * 32 + j].
//
// Step 0 only prepares column 0; step jb + 1 (finish) stores R's rows into the panel's top
// (workgroup 0) and the reflectors explicitly (unit diagonal, zeros above) to
// V[v_first + i * v_ld + j]. Complex elements (vec2): zgeqr2's reflectors (H = I - tau v v^H,
// beta real, A := H^H A) with the sc_* helpers of linalg_scalar_*.
//#include common

alias T = {{T}};
alias R = {{R}};
const WG: u32 = {{WG}}u;
const NB: u32 = 32u;
const RS: u32 = WG / NB;
const CH: u32 = {{CH}}u;
// FAST: the partial sums reduced by every invocation, each row slice's rows loaded together
const FAST: bool = {{FAST}};
const U: u32 = {{U}}u;

struct Params {
    a_first: u32, ld: u32, mp: u32, jb: u32,
    step: u32, parts: u32, pin_first: u32, pout_first: u32,
    t_first: u32, r_first: u32, v_first: u32, v_ld: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> A: array<T>;
@group(0) @binding(2) var<storage, read> Pin: array<T>;
@group(0) @binding(3) var<storage, read_write> Pout: array<T>;
@group(0) @binding(4) var<storage, read_write> Tb: array<T>;
@group(0) @binding(5) var<storage, read_write> Rr: array<T>;
@group(0) @binding(6) var<storage, read_write> V: array<T>;

var<workgroup> red: array<T, WG>;
var<workgroup> wv: array<T, NB>;
var<workgroup> coef: array<T, 2>;

{{SCALAR}}

// The sum over the workgroup's RS row slices of each column's v (invocation lid = rs * NB + qq
// holds column qq's), in the invocations lid < NB (0 in the others); every invocation calls it.
fn column_total(v: T, lid: u32) -> T {
    red[lid] = v;
    workgroupBarrier();
    var u = T(0);
    if lid < NB {
        for (var r = 0u; r < RS; r++) {
            u = u + red[r * NB + lid];
        }
    }
    return u;
}

@compute @workgroup_size({{WG}})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let mp = p.mp;
    let jb = p.jb;
    let a0 = p.a_first;
    let ld = p.ld;
    let qq = lid % NB;
    let rs = lid / NB;
    let r0 = wid.x * CH;
    let r1 = min(mp, r0 + CH);
    let s = p.step;
    if s == jb + 1u {
        if wid.x == 0u {
            for (var e = lid; e < jb * jb; e += WG) {
                let i = e / jb;
                let j = e % jb;
                if j >= i {
                    A[a0 + i * ld + j] = Rr[p.r_first + i * NB + j];
                }
            }
        }
        for (var e = lid; e < (r1 - r0) * jb; e += WG) {
            let i = r0 + e / jb;
            let j = e % jb;
            var v = T(0);
            if i == j {
                v = sc_from(R(1));
            } else if i > j {
                v = A[a0 + i * ld + j];
            }
            V[p.v_first + i * p.v_ld + j] = v;
        }
        return;
    }
    if s > 0u {
        let c = s - 1u;
        // the reflector of column c from the partial sums (in the same order in every workgroup)
        if FAST {
            var t = T(0);
            for (var k = rs; k < p.parts; k += RS) {
                t = t + Pin[p.pin_first + k * NB + qq];
            }
            let u = column_total(t, lid);
            if lid < NB {
                wv[lid] = u;
            }
        } else if lid < NB {
            var t = T(0);
            for (var k = 0u; k < p.parts; k++) {
                t = t + Pin[p.pin_first + k * NB + lid];
            }
            wv[lid] = t;
        }
        workgroupBarrier();
        if lid == 0u {
            let xn2 = sc_re(wv[c]);
            let alpha = A[a0 + c * ld + c];
            let ar = sc_re(alpha);
            var tau = T(0);
            var scale = sc_from(R(1));
            var beta = alpha;
            if xn2 != R(0) || sc_abs2(alpha - sc_from(ar)) != R(0) {
                let norm = sqrt(sc_abs2(alpha) + xn2);
                let b = select(-norm, norm, ar < R(0));
                tau = (sc_from(b) - alpha) / b;
                scale = sc_div(sc_from(R(1)), alpha - sc_from(b));
                beta = sc_from(b);
            }
            coef[0] = tau;
            coef[1] = scale;
            if wid.x == 0u {
                Tb[p.t_first + c * (NB + 1u)] = tau;
                Rr[p.r_first + c * NB + c] = beta;
            }
        }
        workgroupBarrier();
        let tau = coef[0];
        let scale = coef[1];
        if lid < NB {
            var w = T(0);
            if lid > c && lid < jb {
                let head = A[a0 + c * ld + lid];
                w = sc_mul(head + sc_mul(sc_conj(scale), wv[lid]), sc_conj(tau));
                if wid.x == 0u {
                    Rr[p.r_first + c * NB + lid] = head - w;
                }
            }
            red[lid] = w;
        }
        workgroupBarrier();
        if FAST && qq > c && qq < jb {
            // a row slice's rows all loaded before any is stored
            let w = red[qq];
            let lo = max(r0, c + 1u);
            var xs: array<T, U>;
            var ys: array<T, U>;
            //#unroll
            for (var u = 0u; u < U; u++) {
                let i = r0 + rs + u * RS;
                xs[u] = T(0);
                ys[u] = T(0);
                if i >= lo && i < r1 {
                    xs[u] = A[a0 + i * ld + c];
                    ys[u] = A[a0 + i * ld + qq];
                }
            }
            //#unroll
            for (var u = 0u; u < U; u++) {
                let i = r0 + rs + u * RS;
                if i >= lo && i < r1 {
                    A[a0 + i * ld + qq] = ys[u] - sc_mul(sc_mul(xs[u], scale), w);
                }
            }
        } else if qq > c && qq < jb {
            let w = red[qq];
            for (var i = max(r0, c + 1u) + rs; i < r1; i += RS) {
                let v = sc_mul(A[a0 + i * ld + c], scale);
                A[a0 + i * ld + qq] = A[a0 + i * ld + qq] - sc_mul(v, w);
            }
        }
        storageBarrier();
        workgroupBarrier();
        // (column c is read above and not below: its tail is scaled while column s is summed)
        if qq == c {
            for (var i = max(r0, c + 1u) + rs; i < r1; i += RS) {
                A[a0 + i * ld + c] = sc_mul(A[a0 + i * ld + c], scale);
            }
        }
    }
    if s < jb {
        // partial sums of column s over this workgroup's rows i > s
        var part = T(0);
        if FAST && qq >= s && qq < jb {
            let lo = max(r0, s + 1u);
            var xs: array<T, U>;
            var ys: array<T, U>;
            //#unroll
            for (var u = 0u; u < U; u++) {
                let i = r0 + rs + u * RS;
                xs[u] = T(0);
                ys[u] = T(0);
                if i >= lo && i < r1 {
                    xs[u] = A[a0 + i * ld + s];
                    ys[u] = A[a0 + i * ld + qq];
                }
            }
            //#unroll
            for (var u = 0u; u < U; u++) {
                part = part + sc_dotc(xs[u], ys[u]);
            }
        } else if qq >= s && qq < jb {
            for (var i = max(r0, s + 1u) + rs; i < r1; i += RS) {
                part = part + sc_dotc(A[a0 + i * ld + s], A[a0 + i * ld + qq]);
            }
        }
        let t = column_total(part, lid);
        if lid < NB {
            Pout[p.pout_first + wid.x * NB + lid] = t;
        }
    }
}
