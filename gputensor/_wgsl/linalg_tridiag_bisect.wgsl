// Eigenvalues of a symmetric tridiagonal matrix by bisection on Sturm counts (dstebz's count),
// one invocation per eigenvalue.
//
// TE holds d (n entries at t0) and e (n - 1 entries at t0 + n). Invocation i < count writes the
// (k0 + i)-th smallest eigenvalue (from 0) at W[w0 + i]. Each invocation takes the Gershgorin interval and bisects a
// fixed number of times, the same for all (until the interval is below 2 eps ||T||): every
// invocation's intervals lie on one tree of halvings, so the results are ascending. A
// non-finite entry gives NaN.

alias R = {{R}};
const WG: u32 = 64u;
const MAXIT: u32 = {{MAXIT}}u;

struct Params { n: u32, t0: u32, w0: u32, k0: u32, count: u32, q0: u32, q1: u32, q2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> TE: array<R>;
@group(0) @binding(2) var<storage, read_write> W: array<R>;

fn sturm(x: R, n: u32, pivmin: R) -> u32 {
    let d0 = p.t0;
    let e0 = p.t0 + n;
    var q = TE[d0] - x;
    var c = 0u;
    if q <= pivmin {
        c = 1u;
        q = min(q, -pivmin);
    }
    for (var i = 1u; i < n; i++) {
        let e = TE[e0 + i - 1u];
        q = TE[d0 + i] - x - e * e / q;
        if q <= pivmin {
            c = c + 1u;
            q = min(q, -pivmin);
        }
    }
    return c;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let EPS: R = {{EPS}};
    let SAFMIN: R = {{SAFMIN}};
    let n = p.n;
    let at = gid.x + gid.y * nw.x * WG;
    if at >= p.count {
        return;
    }
    let k = p.k0 + at;
    let d0 = p.t0;
    let e0 = p.t0 + n;
    var gl = TE[d0];
    var gu = TE[d0];
    var emax2 = R(0);
    var finite = true;
    for (var i = 0u; i < n; i++) {
        var off = R(0);
        if i > 0u {
            off = abs(TE[e0 + i - 1u]);
        }
        if i + 1u < n {
            let e = TE[e0 + i];
            off = off + abs(e);
            emax2 = max(emax2, e * e);
        }
        let di = TE[d0 + i];
        finite = finite && abs(di) <= {{RMAX}} && off <= {{RMAX}};
        gl = min(gl, di - off);
        gu = max(gu, di + off);
    }
    if !finite {
        W[p.w0 + at] = {{NAN}};
        return;
    }
    let tn = max(abs(gl), abs(gu));
    let pivmin = SAFMIN * max(R(1), emax2);
    let tol = max(R(2) * EPS * tn, R(4) * pivmin);
    var lo = gl - tol;
    var hi = gu + tol;
    var steps = 0u;
    var width = hi - lo;
    while width > tol && steps < MAXIT {
        width = width * R(0.5);
        steps = steps + 1u;
    }
    for (var s = 0u; s < steps; s++) {
        let mid = R(0.5) * (lo + hi);
        if sturm(mid, n, pivmin) > k {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    W[p.w0 + at] = R(0.5) * (lo + hi);
}
