// Householder tridiagonalisation (sytd2), step j in one dispatch: every workgroup finishes step
// j - 1's vector w and forms reflector j itself (the same arithmetic in the same order, so the
// same values in every workgroup), then updates its RB rows of the trailing matrix and forms
// their entries of p = tau_j A v_j; workgroup 0 also writes d_j, e_j, tau_j and row j of V.
//
// A (n x n, row-major, symmetric, at a0) holds the matrix with the rank-2 updates of steps
// 0 .. j - 2 applied to rows / columns >= j. X (at x0) holds five vectors of n: d | e | tau and
// two for p, taken in turn: step j reads p_{j-1} = tau_{j-1} A v_{j-1} from vector ``pin`` and
// writes p_j to vector ``pout``. V (at v0) holds the reflectors as rows (row k: zeros up to
// column k, 1 at column k + 1), H_k = I - tau_k v_k v_k^T.
//
// w = p - (tau_{j-1} / 2) (p^T v_{j-1}) v_{j-1}; column j after step j - 1:
// c_r = A[j][r] - v_r w_j - w_r v_j (row j read: A is symmetric); d_j = c_j; reflector of
// c_{j+1 ..} (dlarfg); then rows and columns >= j + 1: A -= v w^T + w v^T and
// p'_r = tau_j sum_c A[r][c] v_j[c].

alias T = {{T}};
const WG: u32 = {{WG}}u;
const RB: u32 = {{RB}}u;

struct Params { n: u32, j: u32, a0: u32, v0: u32, x0: u32, pin: u32, pout: u32, q0: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> A: array<T>;
@group(0) @binding(2) var<storage, read_write> V: array<T>;
@group(0) @binding(3) var<storage, read_write> X: array<T>;

var<workgroup> red: array<T, WG * RB>;

//#include linalg_wg_total

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nw: vec3<u32>) {
    let n = p.n;
    let j = p.j;
    let g = wid.x + wid.y * nw.x;
    let r0 = j + 1u + g * RB;
    if g > 0u && r0 >= n {
        return;
    }
    let xd = p.x0;
    let xe = xd + n;
    let xt = xe + n;
    let pin = p.x0 + p.pin * n;
    let pout = p.x0 + p.pout * n;
    let row = p.a0 + j * n;
    let has_prev = j > 0u;
    let prev = select(0u, p.v0 + (j - 1u) * n, has_prev);
    // w = p + alpha_w v_{j-1}
    var alpha_w = T(0);
    if has_prev {
        var s = T(0);
        for (var r = j + lid; r < n; r += WG) {
            s = s + X[pin + r] * V[prev + r];
        }
        alpha_w = T(-0.5) * X[xt + j - 1u] * total(s, lid);
    }
    var wj = T(0);
    if has_prev {
        wj = X[pin + j] + alpha_w;  // v_{j-1}[j] = 1
    }
    // column j: c_r = A[j][r] - v_r w_j - w_r
    var ss = T(0);
    for (var r = j + 2u + lid; r < n; r += WG) {
        var c = A[row + r];
        if has_prev {
            let vr = V[prev + r];
            c = c - vr * wj - (X[pin + r] + alpha_w * vr);
        }
        ss = ss + c * c;
    }
    let xnorm2 = total(ss, lid);
    let more = j + 1u < n;
    var alpha = T(0);
    if more {
        alpha = A[row + j + 1u];
        if has_prev {
            let vr = V[prev + j + 1u];
            alpha = alpha - vr * wj - (X[pin + j + 1u] + alpha_w * vr);
        }
    }
    var tau = T(0);
    var beta = alpha;
    var scale = T(0);
    if more && xnorm2 > T(0) {
        let nrm = sqrt(alpha * alpha + xnorm2);
        beta = select(nrm, -nrm, alpha >= T(0));
        tau = (beta - alpha) / beta;
        scale = T(1) / (alpha - beta);
    }
    if g == 0u {
        let vrow = p.v0 + j * n;
        if lid == 0u {
            var cj = A[row + j];
            if has_prev {
                cj = cj - wj - (X[pin + j] + alpha_w);
            }
            X[xd + j] = cj;
            X[xe + j] = beta;
            X[xt + j] = tau;
        }
        for (var r = lid; r < n; r += WG) {
            var v = T(0);
            if r == j + 1u {
                v = T(1);
            } else if r > j + 1u {
                var c = A[row + r];
                if has_prev {
                    let vr = V[prev + r];
                    c = c - vr * wj - (X[pin + r] + alpha_w * vr);
                }
                v = c * scale;
            }
            V[vrow + r] = v;
        }
    }
    if r0 >= n {
        return;
    }
    // rows r0 .. r0 + RB - 1 of the trailing matrix
    var vr: array<T, RB>;
    var wr: array<T, RB>;
    var acc: array<T, RB>;
    for (var q = 0u; q < RB; q++) {
        acc[q] = T(0);
        vr[q] = T(0);
        wr[q] = T(0);
        let r = r0 + q;
        if has_prev && r < n {
            vr[q] = V[prev + r];
            wr[q] = X[pin + r] + alpha_w * vr[q];
        }
    }
    for (var c = j + 1u + lid; c < n; c += WG) {
        var vc = T(0);
        var wc = T(0);
        var cc = A[row + c];
        if has_prev {
            vc = V[prev + c];
            wc = X[pin + c] + alpha_w * vc;
            cc = cc - vc * wj - wc;
        }
        let uc = select(cc * scale, T(1), c == j + 1u);
        for (var q = 0u; q < RB; q++) {
            let r = r0 + q;
            if r < n {
                let idx = p.a0 + r * n + c;
                var a = A[idx];
                if has_prev {
                    a = a - vr[q] * wc - wr[q] * vc;
                    A[idx] = a;
                }
                acc[q] = acc[q] + a * uc;
            }
        }
    }
    for (var q = 0u; q < RB; q++) {
        red[q * WG + lid] = acc[q];
    }
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if lid < s {
            for (var q = 0u; q < RB; q++) {
                red[q * WG + lid] = red[q * WG + lid] + red[q * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
    if lid < RB {
        let r = r0 + lid;
        if r < n {
            X[pout + r] = tau * red[lid * WG];
        }
    }
}
