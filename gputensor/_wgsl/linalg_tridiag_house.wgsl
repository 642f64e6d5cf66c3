// Householder tridiagonalisation (sytd2), the one-workgroup half of step j: finishes step j - 1
// and forms reflector j.
//
// A (n x n, row-major, symmetric, at a0) holds the matrix with the rank-2 updates of steps
// 0 .. j - 2 applied to rows / columns >= j (linalg_tridiag_update.wgsl). X (at x0) holds five
// vectors of n: d | e | tau | w | p. V (at v0) holds the reflectors as rows: row k is v_k
// (zeros up to column k, 1 at column k + 1), H_k = I - tau_k v_k v_k^T.
//
// 1. (j > 0) w = p - (tau_{j-1} / 2) (p^T v_{j-1}) v_{j-1}, p = tau_{j-1} A v_{j-1} (the update
//    kernel's product), written to X's w for rows >= j.
// 2. Column j of A after step j - 1: c_r = A[j][r] - v_r w_j - w_r v_j (rows r >= j; A is
//    symmetric, so row j is read, which is contiguous). d_j = c_j.
// 3. (j < n - 1) the reflector of c_{j+1 ..} (dlarfg): beta = -sign(alpha) |(alpha, x)|,
//    tau = (beta - alpha) / beta, v = (1, x / (alpha - beta)); a zero x gives tau = 0.
//    e_j = beta, row j of V = v_j.

alias T = {{T}};
const WG: u32 = {{WG}}u;

struct Params { n: u32, j: u32, a0: u32, v0: u32, x0: u32, q0: u32, q1: u32, q2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<T>;
@group(0) @binding(2) var<storage, read_write> V: array<T>;
@group(0) @binding(3) var<storage, read_write> X: array<T>;

var<workgroup> red: array<T, WG>;
var<workgroup> pick: T;

//#include linalg_wg_total

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    let n = p.n;
    let j = p.j;
    let xd = p.x0;
    let xe = xd + n;
    let xt = xe + n;
    let xw = xt + n;
    let xp = xw + n;
    let row = p.v0 + j * n;
    let has_prev = j > 0u;
    let prev = select(0u, p.v0 + (j - 1u) * n, has_prev);
    var wj = T(0);
    if has_prev {
        var s = T(0);
        for (var r = j + lid; r < n; r += WG) {
            s = s + X[xp + r] * V[prev + r];
        }
        let pv = total(s, lid);
        let alpha_w = T(-0.5) * X[xt + j - 1u] * pv;
        for (var r = j + lid; r < n; r += WG) {
            X[xw + r] = X[xp + r] + alpha_w * V[prev + r];
        }
        wj = X[xp + j] + alpha_w;  // v_{j-1}[j] = 1
    }
    var ss = T(0);
    for (var r = j + lid; r < n; r += WG) {
        var c = A[p.a0 + j * n + r];
        if has_prev {
            c = c - V[prev + r] * wj - X[xw + r];
        }
        if r == j {
            X[xd + j] = c;
        } else {
            V[row + r] = c;
            if r == j + 1u {
                pick = c;
            } else {
                ss = ss + c * c;
            }
        }
    }
    let xnorm2 = total(ss, lid);
    let more = j + 1u < n;
    var alpha = T(0);
    if more {
        alpha = pick;
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
    if lid == 0u {
        X[xe + j] = beta;
        X[xt + j] = tau;
    }
    for (var r = j + lid; r < n; r += WG) {
        if r == j + 1u {
            V[row + r] = T(1);
        } else if r > j + 1u {
            V[row + r] = V[row + r] * scale;
        }
    }
    for (var r = lid; r <= j; r += WG) {
        V[row + r] = T(0);
    }
}
