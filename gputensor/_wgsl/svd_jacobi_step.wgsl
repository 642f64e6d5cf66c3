// One step of a one-sided (Hestenes) Jacobi sweep over matrices in device memory
// (ops_spectral.py), for matrices too large for svd_jacobi_small.
//
// X holds `batch` matrices of `n` columns of length `m`, column j of matrix b at
// X[x_first + (b * n + j) * m ..] (the matrix transposed, row-major). Step r of the round-robin
// (circle) ordering over np = n rounded up to even columns pairs the columns into np / 2
// disjoint pairs; workgroup (b, k) takes pair k of matrix b: its lanes sum a = |x_p|^2,
// b = |x_q|^2 and g = x_p . x_q, and when |g| > TOL sqrt(a) sqrt(b) rotate both columns (and
// the same columns of V, n x n stored the same way, with WITH_V) so that they are orthogonal.
// A rotation beyond LOOSE sets the matrix's flag for this sweep, F[f_first + b * max_sweeps +
// sweep]; a sweep whose previous sweep left the flag at 0 has converged and does nothing.

alias T = {{T}};

const WG: u32 = {{WG}}u;
const WITH_V: bool = {{WITH_V}};

struct Params {
    batch: u32,
    m: u32,
    n: u32,
    np: u32,
    step: u32,
    sweep: u32,
    max_sweeps: u32,
    x_first: u32,
    v_first: u32,
    f_first: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> X: array<T>;
@group(0) @binding(2) var<storage, read_write> V: array<T>;
@group(0) @binding(3) var<storage, read_write> F: array<atomic<u32>>;

var<workgroup> red: array<T, 3u * WG>;
var<workgroup> skip: u32;

//#include common

fn pair_of(r: u32, k: u32, np: u32) -> vec2<u32> {
    let L = np - 1u;
    var a: u32;
    var b: u32;
    if (k == 0u) {
        a = r;
        b = L;
    } else {
        a = (r + k) % L;
        b = (r + L - k) % L;
    }
    return vec2<u32>(min(a, b), max(a, b));
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lid = lid3.x;
    let gid = linear_group(wid, nwg);
    let pairs = params.np / 2u;
    let mat = gid / pairs;
    let k = gid % pairs;
    if (mat >= params.batch) {
        return;
    }
    let fbase = params.f_first + mat * params.max_sweeps;
    if (lid == 0u) {
        var s = 0u;
        if (params.sweep > 0u && atomicLoad(&F[fbase + params.sweep - 1u]) == 0u) {
            s = 1u;
        }
        skip = s;
    }
    if (workgroupUniformLoad(&skip) != 0u) {
        return;
    }
    let pq = pair_of(params.step, k, params.np);
    let p = pq.x;
    let q = pq.y;
    if (q >= params.n) {
        return;
    }
    let m = params.m;
    let xp = params.x_first + (mat * params.n + p) * m;
    let xq = params.x_first + (mat * params.n + q) * m;
    var a = T(0);
    var b = T(0);
    var g = T(0);
    for (var i = lid; i < m; i += WG) {
        let x = X[xp + i];
        let y = X[xq + i];
        a += x * x;
        b += y * y;
        g += x * y;
    }
    red[lid] = a;
    red[WG + lid] = b;
    red[2u * WG + lid] = g;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            red[lid] += red[lid + s];
            red[WG + lid] += red[WG + lid + s];
            red[2u * WG + lid] += red[2u * WG + lid + s];
        }
        workgroupBarrier();
    }
    a = red[0];
    b = red[WG];
    g = red[2u * WG];
    let bound = sqrt(a) * sqrt(b);
    if (!(abs(g) > {{TOL}} * bound)) {
        return;
    }
    if (lid == 0u && abs(g) > {{LOOSE}} * bound) {
        atomicStore(&F[fbase + params.sweep], 1u);
    }
    let zeta = (b - a) / (T(2) * g);
    var t: T;
    if (abs(zeta) > T(1e15)) {
        t = T(0.5) / zeta;
    } else {
        t = sign(zeta) / (abs(zeta) + sqrt(T(1) + zeta * zeta));
        if (zeta == T(0)) {
            t = T(1);
        }
    }
    let c = T(1) / sqrt(T(1) + t * t);
    let s = c * t;
    for (var i = lid; i < m; i += WG) {
        let x = X[xp + i];
        let y = X[xq + i];
        X[xp + i] = c * x - s * y;
        X[xq + i] = s * x + c * y;
    }
    if (WITH_V) {
        let n = params.n;
        let vp = params.v_first + (mat * n + p) * n;
        let vq = params.v_first + (mat * n + q) * n;
        for (var i = lid; i < n; i += WG) {
            let x = V[vp + i];
            let y = V[vq + i];
            V[vp + i] = c * x - s * y;
            V[vq + i] = s * x + c * y;
        }
    }
}
