// Eigenvectors of a symmetric tridiagonal matrix by inverse iteration (dstein's solves), one
// invocation per eigenvalue.
//
// TE holds d (n entries at t0) and e (n - 1 entries at t0 + n), W the eigenvalues (at w0).
// Invocation kk of the chunk (eigenvalue k = k0 + kk) solves (T - lambda_k I) x = b ``iters``
// times, b a pseudo-random vector first (or, with ``from_z``, column k of Z), then the
// normalised previous x: Gaussian elimination with
// partial pivoting (dgttrf: U has three diagonals) fused with the forward substitution, then
// back substitution; pivots below eps ||T|| are replaced by eps ||T|| (dlagts). The vector, of
// unit 2-norm, is column k of Z (n rows of zs, row-major, at z0), which also holds the
// right-hand side;
// S (3 n x count at s0, entry i of invocation kk at i * count + kk) holds U's diagonals.
// Eigenvalues closer than the caller's cluster gap are orthogonalised by the caller.

alias R = {{R}};
const WG: u32 = 64u;

struct Params { n: u32, t0: u32, w0: u32, z0: u32, s0: u32, k0: u32, count: u32, zs: u32, from_z: u32, iters: u32,
                 q0: u32, q1: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> TE: array<R>;
@group(0) @binding(2) var<storage, read> W: array<R>;
@group(0) @binding(3) var<storage, read_write> Z: array<R>;
@group(0) @binding(4) var<storage, read_write> S: array<R>;

fn start(k: u32, i: u32) -> R {
    // lowbias32 of (k, i): uniform in [-1, 1)
    var h = (k * 0x9e3779b9u) ^ ((i + 0x7f4a7c15u) * 0x85ebca6bu);
    h = h ^ (h >> 16u);
    h = h * 0x7feb352du;
    h = h ^ (h >> 15u);
    h = h * 0x846ca68bu;
    h = h ^ (h >> 16u);
    return R(f32(h >> 8u) * (1.0 / 8388608.0)) - R(1);
}

fn pivot(u: R, tol: R) -> R {
    if abs(u) < tol {
        return select(-tol, tol, u >= R(0));
    }
    return u;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let EPS: R = {{EPS}};
    let SAFMIN: R = {{SAFMIN}};
    let n = p.n;
    let cnt = p.count;
    let kk = gid.x + gid.y * nw.x * WG;
    if kk >= cnt {
        return;
    }
    let k = p.k0 + kk;
    let d0 = p.t0;
    let e0 = p.t0 + n;
    let lam = W[p.w0 + k];
    var tn = R(0);
    for (var i = 0u; i < n; i++) {
        var off = R(0);
        if i > 0u {
            off = abs(TE[e0 + i - 1u]);
        }
        if i + 1u < n {
            off = off + abs(TE[e0 + i]);
        }
        tn = max(tn, abs(TE[d0 + i]) + off);
    }
    let tol = max(EPS * tn, SAFMIN);
    let sd = p.s0;
    let s1 = sd + n * cnt;
    let s2 = s1 + n * cnt;
    let zc = p.z0 + k;
    var scale = R(1);
    let zs = p.zs;
    for (var it = 0u; it < p.iters; it++) {
        let given = it > 0u || p.from_z != 0u;
        // elimination with partial pivoting, the right-hand side along (Y into Z's column)
        var ca = TE[d0] - lam;
        var cb = R(0);
        if n > 1u {
            cb = TE[e0];
        }
        var yc = start(k, 0u);
        if given {
            yc = Z[zc] * scale;
        }
        for (var i = 0u; i + 1u < n; i++) {
            let c = TE[e0 + i];
            let na = TE[d0 + i + 1u] - lam;
            var nb = R(0);
            if i + 2u < n {
                nb = TE[e0 + i + 1u];
            }
            var yn = start(k, i + 1u);
            if given {
                yn = Z[zc + (i + 1u) * zs] * scale;
            }
            let at = i * cnt + kk;
            if abs(ca) >= abs(c) {
                var l = R(0);
                if ca != R(0) {
                    l = c / ca;
                }
                S[sd + at] = ca;
                S[s1 + at] = cb;
                S[s2 + at] = R(0);
                Z[zc + i * zs] = yc;
                ca = na - l * cb;
                cb = nb;
                yc = yn - l * yc;
            } else {
                let l = ca / c;
                S[sd + at] = c;
                S[s1 + at] = na;
                S[s2 + at] = nb;
                Z[zc + i * zs] = yn;
                ca = cb - l * na;
                cb = -l * nb;
                yc = yc - l * yn;
            }
        }
        // back substitution
        var x1 = yc / pivot(ca, tol);
        Z[zc + (n - 1u) * zs] = x1;
        // the 2-norm as max |x| * sqrt(sum (x / max |x|)^2) (dnrm2's scaling)
        var mx = abs(x1);
        var ssq = R(1);
        var x2 = R(0);
        for (var i = n - 1u; i > 0u; i--) {
            let r = i - 1u;
            let at = r * cnt + kk;
            let x = (Z[zc + r * zs] - S[s1 + at] * x1 - S[s2 + at] * x2) / pivot(S[sd + at], tol);
            Z[zc + r * zs] = x;
            let ax = abs(x);
            if ax > mx {
                ssq = R(1) + ssq * (mx / ax) * (mx / ax);
                mx = ax;
            } else if ax > R(0) {
                ssq = ssq + (ax / mx) * (ax / mx);
            }
            x2 = x1;
            x1 = x;
        }
        scale = R(1) / (mx * sqrt(ssq));
    }
    for (var i = 0u; i < n; i++) {
        Z[zc + i * zs] = Z[zc + i * zs] * scale;
    }
}
