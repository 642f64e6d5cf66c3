// Batched small Householder QR: one workgroup per m x n matrix (m, n <= NM), held in workgroup
// memory. Reflectors as LAPACK's geqrf (beta = -sign(alpha) * norm, v[0] = 1, tau = (beta -
// alpha) / beta); Q (m x kq, kq = min(m, n) or m) is accumulated backwards from the identity as
// orgqr does; R (kr x n, kr = min(m, n) or m) is written with zeros below the diagonal.
// Matrix `bid` is A[a_first + bid * a_bs + i * a_ld + j]; Q and R likewise.
// Complex elements (vec2): zgeqrf's reflectors H = I - tau v v^H (beta real, tau = (beta -
// alpha) / beta), A := H^H A, Q = H_1 ... H_k; the sc_* helpers of linalg_scalar_* do the
// arithmetic.
//#include common

alias T = {{T}};
alias R = {{R}};
const NM: u32 = {{NMAX}}u;
const WG: u32 = 64u;

struct Params {
    batch: u32, m: u32, n: u32, kq: u32,
    kr: u32, a_first: u32, a_ld: u32, a_bs: u32,
    q_first: u32, q_ld: u32, q_bs: u32, r_first: u32,
    r_ld: u32, r_bs: u32, p0: u32, p1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<T>;
@group(0) @binding(2) var<storage, read_write> Q: array<T>;
@group(0) @binding(3) var<storage, read_write> Rout: array<T>;

var<workgroup> a: array<T, NM * NM>;
var<workgroup> q: array<T, NM * NM>;
var<workgroup> tau: array<T, NM>;

{{SCALAR}}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let bid = linear_group(wid, nwg);
    if bid >= p.batch {
        return;
    }
    let m = p.m;
    let n = p.n;
    let k = min(m, n);
    let base = p.a_first + bid * p.a_bs;
    for (var t = lid; t < m * n; t += WG) {
        let i = t / n;
        let j = t % n;
        a[i * NM + j] = A[base + i * p.a_ld + j];
    }
    workgroupBarrier();
    for (var j = 0u; j < k; j++) {
        if lid == 0u {
            let alpha = a[j * NM + j];
            // the column's norm scaled by its largest part (no overflow or underflow of squares)
            var mx = sc_maxpart(alpha);
            var tail = false;
            for (var i = j + 1u; i < m; i++) {
                mx = max(mx, sc_maxpart(a[i * NM + j]));
                tail = tail || sc_nonzero(a[i * NM + j]);
            }
            var xn2 = R(0);
            if mx > R(0) {
                for (var i = j + 1u; i < m; i++) {
                    xn2 = xn2 + sc_abs2(a[i * NM + j] / mx);
                }
            }
            let ar = sc_re(alpha);
            if !tail && sc_abs2(alpha - sc_from(ar)) == R(0) {
                tau[j] = T(0);
            } else {
                let norm = mx * sqrt(sc_abs2(alpha / mx) + xn2);
                let beta = select(-norm, norm, ar < R(0));
                tau[j] = (sc_from(beta) - alpha) / beta;
                let scale = sc_div(sc_from(R(1)), alpha - sc_from(beta));
                for (var i = j + 1u; i < m; i++) {
                    a[i * NM + j] = sc_mul(a[i * NM + j], scale);
                }
                a[j * NM + j] = sc_from(beta);
            }
        }
        workgroupBarrier();
        let t = tau[j];
        for (var c = j + 1u + lid; c < n; c += WG) {
            var w = a[j * NM + c];
            for (var i = j + 1u; i < m; i++) {
                w = w + sc_dotc(a[i * NM + j], a[i * NM + c]);
            }
            w = sc_mul(w, sc_conj(t));
            a[j * NM + c] = a[j * NM + c] - w;
            for (var i = j + 1u; i < m; i++) {
                a[i * NM + c] = a[i * NM + c] - sc_mul(w, a[i * NM + j]);
            }
        }
        workgroupBarrier();
    }
    let kq = p.kq;
    for (var t = lid; t < m * kq; t += WG) {
        let i = t / kq;
        let c = t % kq;
        q[i * NM + c] = select(T(0), sc_from(R(1)), i == c);
    }
    workgroupBarrier();
    for (var jj = 0u; jj < k; jj++) {
        let j = k - 1u - jj;
        let t = tau[j];
        for (var c = j + lid; c < kq; c += WG) {
            var w = q[j * NM + c];
            for (var i = j + 1u; i < m; i++) {
                w = w + sc_dotc(a[i * NM + j], q[i * NM + c]);
            }
            w = sc_mul(w, t);
            q[j * NM + c] = q[j * NM + c] - w;
            for (var i = j + 1u; i < m; i++) {
                q[i * NM + c] = q[i * NM + c] - sc_mul(w, a[i * NM + j]);
            }
        }
        workgroupBarrier();
    }
    let qb = p.q_first + bid * p.q_bs;
    for (var t = lid; t < m * kq; t += WG) {
        let i = t / kq;
        let c = t % kq;
        Q[qb + i * p.q_ld + c] = q[i * NM + c];
    }
    let rb = p.r_first + bid * p.r_bs;
    for (var t = lid; t < p.kr * n; t += WG) {
        let i = t / n;
        let c = t % n;
        Rout[rb + i * p.r_ld + c] = select(T(0), a[i * NM + c], c >= i && i < k);
    }
}
