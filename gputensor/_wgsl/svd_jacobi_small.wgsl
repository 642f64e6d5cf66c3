// One-sided (Hestenes) Jacobi SVD / symmetric eigensolver for small matrices, one workgroup
// per matrix, the whole iteration in workgroup memory (ops_spectral.py).
//
// The workgroup holds B (M rows x N columns, column j at Bs[j * M ..]) and, for the SVD, V
// (N x N, column j at Vs[j * N ..]). A sweep runs the NP - 1 steps of the round-robin
// (circle) ordering of NP = N rounded up to even columns: each step pairs every column with
// one other, P = NP / 2 disjoint pairs, and TPP lanes per pair compute the pair's
// a = |b_p|^2, b = |b_q|^2, g = b_p^H b_q (a tree over the lanes), then rotate both columns
// (and V's) by the unitary J = [[c, s e], [-s conj(e), c]] (e = g / |g|; c, s the real rotation
// of a, b, |g|) that makes them orthogonal when |g| > TOL sqrt(a) sqrt(b). Sweeps stop when
// one has no pair beyond LOOSE among the columns whose squared norms exceed NEGL2 (unconverged
// after MAX_SWEEPS: status 2). A column at rounding level (two equal columns cancel to one such
// column) cannot be made orthogonal to the others, so it takes part in the rotations but not in
// the convergence test.
//
// Elements are T (real, or complex as vec2), norms and values R; the sc_* helpers of
// linalg_scalar_real / linalg_scalar_complex (the SCALAR placeholder) do the arithmetic.
//
// SVD mode: B is the input scaled by 1 / max|x|; afterwards sigma_j = |b_j| (times the scale),
// u_j = b_j / |b_j|, v_j the accumulated rotations, written in descending order of sigma.
// The rows of Vh are the conjugated columns of V. Status 1: some column's norm is at most
// NEGL times the largest (negligible singular values: the caller replaces their left vectors
// by an orthonormal completion of the others).
// EIGH mode: B = A / s + 2 I with s a bound of the infinity norm of A (its lower triangle
// mirrored, conjugated above the diagonal, the diagonal's real part), so B is Hermitian positive
// definite with eigenvalues in [1, 3]: B V = U diag(sigma) has U = V up to phases, so the
// eigenvectors are the normalised final columns u_j, and the eigenvalues their Rayleigh
// quotients u_j^H A u_j (more accurate than s (|b_j| - 2)); written in ascending order. Matrices with a non-finite entry give NaN results (status 0).
//
// Output vector r, component i goes to element first + r * vs + i * es of its binding.

alias T = {{T}};
alias R = {{R}};

const M: u32 = {{M}}u;
const N: u32 = {{N}}u;
const NP: u32 = {{NP}}u;
const P: u32 = {{P}}u;
const TPP: u32 = {{TPP}}u;
const WG: u32 = {{WG}}u;
const EIGH: bool = {{EIGH}};
const MAX_SWEEPS: u32 = {{SWEEPS}}u;
const VN: u32 = {{VN}}u;

struct Params {
    batch: u32,      // matrices in this dispatch
    x_first: u32,    // element index of matrix 0 in X
    s_first: u32,    // sigma / eigenvalues: element index of matrix 0
    u_first: u32,    // U (SVD) / eigenvectors (EIGH)
    u_vs: u32,
    u_es: u32,
    v_first: u32,    // V as rows of Vh (SVD only)
    v_vs: u32,
    v_es: u32,
    st_first: u32,   // status word of matrix 0
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> X: array<T>;
@group(0) @binding(2) var<storage, read_write> S: array<R>;
@group(0) @binding(3) var<storage, read_write> U: array<T>;
@group(0) @binding(4) var<storage, read_write> Vh: array<T>;
@group(0) @binding(5) var<storage, read_write> Status: array<u32>;

var<workgroup> Bs: array<T, M * N>;
var<workgroup> Vs: array<T, VN>;
var<workgroup> red: array<R, 2u * WG>;
var<workgroup> redg: array<T, WG>;
var<workgroup> nrm: array<R, NP>;
var<workgroup> lam: array<R, NP>;
var<workgroup> rank: array<u32, NP>;
var<workgroup> flag: atomic<u32>;
var<workgroup> flag_plain: u32;

//#include common

{{SCALAR}}

// Element (i, j) of the Hermitian matrix whose lower triangle starts at X[base] (row-major).
fn herm(base: u32, i: u32, j: u32) -> T {
    if (i == j) {
        return sc_from(sc_re(X[base + i * N + i]));
    }
    if (i > j) {
        return X[base + i * N + j];
    }
    return sc_conj(X[base + j * N + i]);
}

// Pair k of round-robin step r over NP players (player NP - 1 fixed, the others rotating).
fn pair_of(r: u32, k: u32) -> vec2<u32> {
    let L = NP - 1u;
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

// Sum red[slot * WG + lid] and redg[lid] over the TPP lanes of each pair (result at the
// pair's lane 0).
fn reduce3(lid: u32, lane: u32) {
    for (var s = TPP / 2u; s > 0u; s = s / 2u) {
        if (lane < s) {
            red[lid] += red[lid + s];
            red[WG + lid] += red[WG + lid + s];
            redg[lid] += redg[lid + s];
        }
        workgroupBarrier();
    }
}

fn uniform_flag(lid: u32) -> u32 {
    workgroupBarrier();
    if (lid == 0u) {
        flag_plain = atomicLoad(&flag);
    }
    return workgroupUniformLoad(&flag_plain);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lid = lid3.x;
    let mat = linear_group(wid, nwg);
    if (mat >= params.batch) {
        return;
    }
    let k = lid / TPP;
    let lane = lid % TPP;
    let maxf = {{MAXF}};
    let tol = {{TOL}};
    let loose = {{LOOSE}};
    let negl = {{NEGL}};
    let negl2 = {{NEGL2}};

    // ---- load (EIGH: the lower triangle, mirrored), find the scale, flag non-finite input
    if (lid == 0u) {
        atomicStore(&flag, 0u);
    }
    workgroupBarrier();
    let xbase = params.x_first + mat * M * N;
    var local_bad = false;
    for (var e = lid; e < M * N; e += WG) {
        let j = e / M;
        let i = e % M;
        var v: T;
        if (EIGH) {
            v = herm(xbase, i, j);
        } else {
            v = X[xbase + e];
        }
        if (!sc_finite(v, maxf)) {
            local_bad = true;
        }
        Bs[e] = v;
    }
    if (local_bad) {
        atomicStore(&flag, 1u);
    }
    let bad = uniform_flag(lid);
    var scale = R(1);
    if (bad == 0u) {
        var local_max = R(0);
        if (EIGH) {
            for (var j = lid; j < N; j += WG) {
                var t = R(0);
                for (var i = 0u; i < M; i++) {
                    t += sc_norm1(Bs[j * M + i]);
                }
                local_max = max(local_max, t);
            }
        } else {
            for (var e = lid; e < M * N; e += WG) {
                local_max = max(local_max, sc_maxpart(Bs[e]));
            }
        }
        red[lid] = local_max;
        workgroupBarrier();
        if (lid == 0u) {
            var mx = R(0);
            for (var t = 0u; t < WG; t++) {
                mx = max(mx, red[t]);
            }
            red[0] = mx;
        }
        workgroupBarrier();
        let mx = red[0];
        if (mx > R(0)) {
            scale = mx;
        }
        for (var e = lid; e < M * N; e += WG) {
            var v = Bs[e] / scale;  // (not times 1 / scale: that overflows for subnormal scales)
            if (EIGH && e / M == e % M) {
                v += sc_from(R(2));
            }
            Bs[e] = v;
        }
        if (!EIGH) {
            for (var e = lid; e < VN; e += WG) {
                Vs[e] = select(T(0), sc_from(R(1)), e / N == e % N);
            }
        }
        workgroupBarrier();
    }

    // ---- sweeps
    var status = 0u;
    if (bad == 0u) {
        status = 2u;
        for (var sweep = 0u; sweep < MAX_SWEEPS; sweep++) {
            if (lid == 0u) {
                atomicStore(&flag, 0u);
            }
            for (var r = 0u; r < NP - 1u; r++) {
                let pq = pair_of(r, k);
                let p = pq.x;
                let q = pq.y;
                let valid = q < N;
                var a = R(0);
                var b = R(0);
                var g = T(0);
                if (valid) {
                    for (var i = lane; i < M; i += TPP) {
                        let x = Bs[p * M + i];
                        let y = Bs[q * M + i];
                        a += sc_abs2(x);
                        b += sc_abs2(y);
                        g += sc_dotc(x, y);
                    }
                }
                red[lid] = a;
                red[WG + lid] = b;
                redg[lid] = g;
                workgroupBarrier();
                reduce3(lid, lane);
                a = red[k * TPP];
                b = red[WG + k * TPP];
                g = redg[k * TPP];
                let bound = sqrt(a) * sqrt(b);
                let ag = sc_abs(g);
                if (valid && ag > tol * bound) {
                    if (lane == 0u && ag > loose * bound && min(a, b) > negl2) {
                        atomicStore(&flag, 1u);
                    }
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
                    let c = R(1) / sqrt(R(1) + t * t);
                    // J = [[c, se], [-conj(se), c]], se = s g / |g| (real: exactly +-s)
                    let se = (g / ag) * (c * t);
                    let sec = sc_conj(se);
                    for (var i = lane; i < M; i += TPP) {
                        let x = Bs[p * M + i];
                        let y = Bs[q * M + i];
                        Bs[p * M + i] = c * x - sc_mul(sec, y);
                        Bs[q * M + i] = sc_mul(se, x) + c * y;
                    }
                    if (!EIGH) {
                        for (var i = lane; i < N; i += TPP) {
                            let x = Vs[p * N + i];
                            let y = Vs[q * N + i];
                            Vs[p * N + i] = c * x - sc_mul(sec, y);
                            Vs[q * N + i] = sc_mul(se, x) + c * y;
                        }
                    }
                }
                workgroupBarrier();
            }
            if (uniform_flag(lid) == 0u) {
                status = 0u;
                break;
            }
        }

        // ---- column norms (pair slot k holds columns k and k + P)
        var a = R(0);
        var b = R(0);
        let c0 = k;
        let c1 = k + P;
        for (var i = lane; i < M; i += TPP) {
            if (c0 < N) {
                a += sc_abs2(Bs[c0 * M + i]);
            }
            if (c1 < N) {
                b += sc_abs2(Bs[c1 * M + i]);
            }
        }
        red[lid] = a;
        red[WG + lid] = b;
        redg[lid] = T(0);
        workgroupBarrier();
        reduce3(lid, lane);
        if (lane == 0u) {
            nrm[c0] = sqrt(red[lid]);
            nrm[c1] = sqrt(red[WG + lid]);
        }
        workgroupBarrier();
        // ---- SVD: negligible columns (status 1 when converged)
        if (!EIGH) {
            var top = R(0);
            for (var j = 0u; j < N; j++) {
                top = max(top, nrm[j]);
            }
            var deficient = false;
            for (var j = 0u; j < N; j++) {
                deficient = deficient || !(nrm[j] > negl * top);
            }
            if (deficient && status == 0u) {
                status = 1u;
            }
        }
        // ---- EIGH: eigenvalues as the Rayleigh quotients u_j^H A u_j of the input
        for (var j = lid; j < N; j += WG) {
            if (EIGH) {
                let d = nrm[j];
                var rq = R(0);
                for (var i = 0u; i < N; i++) {
                    var t = T(0);
                    for (var o = 0u; o < N; o++) {
                        t += sc_mul(herm(xbase, i, o), Bs[j * M + o]);
                    }
                    rq += sc_re(sc_dotc(Bs[j * M + i], t));
                }
                lam[j] = rq / (d * d);
            } else {
                lam[j] = nrm[j];
            }
        }
        workgroupBarrier();
        // ---- ranks: SVD descending, EIGH ascending (ties by column index)
        for (var j = lid; j < N; j += WG) {
            let kj = lam[j];
            var rk = 0u;
            for (var o = 0u; o < N; o++) {
                let ko = lam[o];
                var before: bool;
                if (EIGH) {
                    before = ko < kj;
                } else {
                    before = ko > kj;
                }
                if (before || (ko == kj && o < j)) {
                    rk += 1u;
                }
            }
            rank[j] = rk;
        }
        workgroupBarrier();
    }

    // ---- outputs
    let nan = {{NAN}};
    let sbase = params.s_first + mat * N;
    let ubase = params.u_first + mat * M * N;
    for (var j = lid; j < N; j += WG) {
        if (bad != 0u) {
            S[sbase + j] = nan;
        } else if (EIGH) {
            S[sbase + rank[j]] = lam[j];
        } else {
            S[sbase + rank[j]] = scale * nrm[j];
        }
    }
    for (var e = lid; e < M * N; e += WG) {
        let j = e / M;
        let i = e % M;
        if (bad != 0u) {
            U[ubase + j * params.u_vs + i * params.u_es] = T(nan);
        } else {
            let d = nrm[j];
            var v = T(0);
            if (d > R(0)) {
                v = Bs[e] / d;
            }
            U[ubase + rank[j] * params.u_vs + i * params.u_es] = v;
        }
    }
    if (!EIGH) {
        let vbase = params.v_first + mat * N * N;
        for (var e = lid; e < N * N; e += WG) {
            let j = e / N;
            let i = e % N;
            if (bad != 0u) {
                Vh[vbase + j * params.v_vs + i * params.v_es] = T(nan);
            } else {
                Vh[vbase + rank[j] * params.v_vs + i * params.v_es] = sc_conj(Vs[e]);
            }
        }
    }
    if (lid == 0u) {
        Status[params.st_first + mat] = status;
    }
}
