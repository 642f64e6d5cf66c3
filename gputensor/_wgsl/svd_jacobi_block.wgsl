// One step of a block one-sided Jacobi sweep over matrices in device memory (ops_spectral.py),
// for matrices too large for svd_jacobi_small.
//
// X holds `batch` matrices of `n` columns of length `m`, column j of matrix b at
// X[x_first + (b * n + j) * m ..] (the matrix transposed, row-major). The columns form nb
// blocks of BS (nb even; columns past n are zero and never written). Step r of the round-robin
// (circle) ordering over the blocks pairs them into nb / 2 disjoint pairs; workgroup (b, k)
// takes pair k of matrix b, K = 2 BS columns:
//
// 1. G = B^H B, the K x K Gram matrix of the pair's columns (tiles of TR rows in workgroup
//    memory, 2 x 2 entries per invocation);
// 2. if some |G_pq| > TOL sqrt(G_pp G_qq) (TOL, LOOSE, NEGL2: parameters, float32 bits): cyclic two-sided Jacobi on G (round-robin over the
//    K columns, at most INNER sweeps; G <- J^H G J with J = [[c, se], [-conj(se), c]] on
//    columns p, q, se = s G_pq / |G_pq|) accumulating the rotations in R (unitary, K x K);
//    beyond LOOSE the matrix's flag for this sweep is set, F[f_first + b * max_sweeps + sweep]
//    (not for columns of squared norm at most NEGL2: rounding noise of a matrix scaled to
//    largest magnitude 1, which cannot be made orthogonal to the others);
// 3. B <- B R, and with WITH_V the same columns of V (n x n, stored the same way) <- V R.
//
// A sweep whose previous sweep left the flag at 0 has converged and does nothing.
// Elements are T (real, or complex as vec2), norms R; the sc_* helpers of linalg_scalar_real /
// linalg_scalar_complex (the SCALAR placeholder) do the arithmetic.

alias T = {{T}};
alias R = {{R}};

const BS: u32 = {{BS}}u;
const K: u32 = 2u * BS;
const H: u32 = BS;          // 2 x 2 Gram entries per invocation: H x H invocations
const WG: u32 = 256u;
const TR: u32 = {{TR}}u;
const PER: u32 = {{PER}}u;   // tile elements per invocation (TR * K / WG)
const INNER: u32 = {{INNER}}u;
const WITH_V: bool = {{WITH_V}};

struct Params {
    batch: u32,
    m: u32,
    n: u32,
    nb: u32,
    step: u32,
    sweep: u32,
    max_sweeps: u32,
    x_first: u32,
    v_first: u32,
    f_first: u32,
    tol: u32,        // f32 bits: the rotation threshold (TOL)
    loose: u32,      // f32 bits: the convergence threshold (LOOSE)
    negl2: u32,      // f32 bits: squared norm of a negligible column (NEGL2)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> X: array<T>;
@group(0) @binding(2) var<storage, read_write> V: array<T>;
@group(0) @binding(3) var<storage, read_write> F: array<atomic<u32>>;

var<workgroup> G: array<T, K * K>;
var<workgroup> Rot: array<T, K * K>;
var<workgroup> tile: array<T, TR * K>;
var<workgroup> cs_c: array<R, BS>;
var<workgroup> cs_se: array<T, BS>;
var<workgroup> flag: atomic<u32>;
var<workgroup> flag_plain: u32;

//#include common

{{SCALAR}}

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

fn uniform_flag(lid: u32) -> u32 {
    workgroupBarrier();
    if (lid == 0u) {
        flag_plain = atomicLoad(&flag);
    }
    return workgroupUniformLoad(&flag_plain);
}

// Global column of local column c (0..K) of block pair (bi, bj).
fn column(c: u32, bi: u32, bj: u32) -> u32 {
    return select(bj * BS + c - BS, bi * BS + c, c < BS);
}

// tile <- rows i0 .. i0 + TR of the pair's columns of the matrix at `base` (column length len),
// zeros outside. Buffer 0: X, 1: V.
fn load_tile(which: u32, base: u32, len: u32, i0: u32, bi: u32, bj: u32, lid: u32) {
    for (var e = lid; e < TR * K; e += WG) {
        let c = e / TR;
        let i = e % TR;
        let col = column(c, bi, bj);
        let row = i0 + i;
        var v = T(0);
        if (col < params.n && row < len) {
            if (which == 0u) {
                v = X[base + col * len + row];
            } else {
                v = V[base + col * len + row];
            }
        }
        tile[e] = v;
    }
}

// Columns <- columns Rot over the whole column length (buffer `which`).
fn apply(which: u32, base: u32, len: u32, bi: u32, bj: u32, lid: u32) {
    for (var i0 = 0u; i0 < len; i0 += TR) {
        load_tile(which, base, len, i0, bi, bj, lid);
        workgroupBarrier();
        var out: array<T, PER>;
        //#unroll
        for (var t = 0u; t < PER; t++) {
            let e = lid + t * WG;
            let c = e / TR;
            let i = e % TR;
            var acc = T(0);
            for (var q = 0u; q < K; q++) {
                acc += sc_mul(tile[q * TR + i], Rot[q * K + c]);
            }
            out[t] = acc;
        }
        workgroupBarrier();
        //#unroll
        for (var t = 0u; t < PER; t++) {
            let e = lid + t * WG;
            let c = e / TR;
            let i = e % TR;
            let col = column(c, bi, bj);
            let row = i0 + i;
            if (col < params.n && row < len) {
                if (which == 0u) {
                    X[base + col * len + row] = out[t];
                } else {
                    V[base + col * len + row] = out[t];
                }
            }
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lid = lid3.x;
    let gid = linear_group(wid, nwg);
    let pairs = params.nb / 2u;
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
        atomicStore(&flag, s);
    }
    if (uniform_flag(lid) != 0u) {
        return;
    }
    let bp = pair_of(params.step, k, params.nb);
    let bi = bp.x;
    let bj = bp.y;
    let m = params.m;
    let n = params.n;
    let xbase = params.x_first + mat * n * m;
    let tol = R(bitcast<f32>(params.tol));
    let loose = R(bitcast<f32>(params.loose));
    let negl2 = R(bitcast<f32>(params.negl2));

    // ---- 1. the Gram matrix: invocation lid sums the 2 x 2 entries (p0 + a, q0 + b)
    let gram_lane = lid < H * H;
    let p0 = 2u * ((lid % (H * H)) / H);
    let q0 = 2u * (lid % H);
    var g00 = T(0);
    var g01 = T(0);
    var g10 = T(0);
    var g11 = T(0);
    for (var i0 = 0u; i0 < m; i0 += TR) {
        load_tile(0u, xbase, m, i0, bi, bj, lid);
        workgroupBarrier();
        for (var i = 0u; i < TR; i++) {
            let x0 = tile[p0 * TR + i];
            let x1 = tile[(p0 + 1u) * TR + i];
            let y0 = tile[q0 * TR + i];
            let y1 = tile[(q0 + 1u) * TR + i];
            g00 += sc_dotc(x0, y0);
            g01 += sc_dotc(x0, y1);
            g10 += sc_dotc(x1, y0);
            g11 += sc_dotc(x1, y1);
        }
        workgroupBarrier();
    }
    if (gram_lane) {
        G[p0 * K + q0] = g00;
        G[p0 * K + q0 + 1u] = g01;
        G[(p0 + 1u) * K + q0] = g10;
        G[(p0 + 1u) * K + q0 + 1u] = g11;
    }
    for (var e = lid; e < K * K; e += WG) {
        Rot[e] = select(T(0), sc_from(R(1)), e / K == e % K);
    }
    if (lid == 0u) {
        atomicStore(&flag, 0u);
    }
    workgroupBarrier();

    // ---- 2. test, then diagonalise G by two-sided Jacobi
    var any_loose = false;
    for (var e = lid; e < K * K; e += WG) {
        let p = e / K;
        let q = e % K;
        if (p < q) {
            let a = sc_re(G[p * K + p]);
            let b = sc_re(G[q * K + q]);
            let bound = sqrt(a) * sqrt(b);
            let g = sc_abs(G[e]);
            if (g > tol * bound) {
                atomicStore(&flag, 1u);
            }
            if (g > loose * bound && min(a, b) > negl2) {
                any_loose = true;
            }
        }
    }
    if (any_loose) {
        atomicStore(&F[fbase + params.sweep], 1u);
    }
    if (uniform_flag(lid) == 0u) {
        return;
    }
    for (var sw = 0u; sw < INNER; sw++) {
        workgroupBarrier();
        if (lid == 0u) {
            atomicStore(&flag, 0u);
        }
        workgroupBarrier();
        for (var r = 0u; r < K - 1u; r++) {
            if (lid < BS) {
                let pq = pair_of(r, lid, K);
                let a = sc_re(G[pq.x * K + pq.x]);
                let b = sc_re(G[pq.y * K + pq.y]);
                let g = G[pq.x * K + pq.y];
                let ag = sc_abs(g);
                var c = R(1);
                var se = T(0);
                if (ag > tol * sqrt(a) * sqrt(b)) {
                    atomicStore(&flag, 1u);
                    let zeta = (b - a) / (R(2) * ag);
                    var t: R;
                    if (abs(zeta) > R(1e15)) {
                        t = R(0.5) / zeta;
                    } else {
                        t = sign(zeta) / (abs(zeta) + sqrt(R(1) + zeta * zeta));
                        if (zeta == R(0)) {
                            t = R(1);
                        }
                    }
                    c = R(1) / sqrt(R(1) + t * t);
                    se = (g / ag) * (c * t);  // s g / |g| (real: exactly +-s)
                }
                cs_c[lid] = c;
                cs_se[lid] = se;
            }
            workgroupBarrier();
            // G <- G J and Rot <- Rot J (columns p, q of every row)
            for (var e = lid; e < K * BS; e += WG) {
                let i = e / BS;
                let pr = e % BS;
                let pq = pair_of(r, pr, K);
                let c = cs_c[pr];
                let se = cs_se[pr];
                let sec = sc_conj(se);
                let gp = G[i * K + pq.x];
                let gq = G[i * K + pq.y];
                G[i * K + pq.x] = c * gp - sc_mul(sec, gq);
                G[i * K + pq.y] = sc_mul(se, gp) + c * gq;
                let rp = Rot[i * K + pq.x];
                let rq = Rot[i * K + pq.y];
                Rot[i * K + pq.x] = c * rp - sc_mul(sec, rq);
                Rot[i * K + pq.y] = sc_mul(se, rp) + c * rq;
            }
            workgroupBarrier();
            // G <- J^H G (rows p, q of every column)
            for (var e = lid; e < K * BS; e += WG) {
                let j = e / BS;
                let pr = e % BS;
                let pq = pair_of(r, pr, K);
                let c = cs_c[pr];
                let se = cs_se[pr];
                let gp = G[pq.x * K + j];
                let gq = G[pq.y * K + j];
                G[pq.x * K + j] = c * gp - sc_mul(se, gq);
                G[pq.y * K + j] = sc_mul(sc_conj(se), gp) + c * gq;
            }
            workgroupBarrier();
        }
        if (uniform_flag(lid) == 0u) {
            break;
        }
    }

    // ---- 3. rotate the columns (and V's)
    workgroupBarrier();
    apply(0u, xbase, m, bi, bj, lid);
    if (WITH_V) {
        apply(1u, params.v_first + mat * n * n, n, bi, bj, lid);
    }
}
