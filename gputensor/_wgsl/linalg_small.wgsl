// Batched small factorizations: one workgroup per matrix of order n <= NM, the matrix held in
// workgroup memory (row stride NM). Matrix `bid` is A[a_first + bid * a_bs + i * a_ld + j].
//
// (Cholesky, and solve / inverse with up to 32 right-hand columns, run on
// linalg_small_rows.wgsl.)
// OP 1..3 (LU with partial pivoting, row swaps as LAPACK's getrf): a pivot column of zeros marks
//   the matrix failed and is skipped, as getrf does (NaN columns do not fail); OP 1, 2 write each
//   matrix's info word, info[i_first + bid]: 1 when it failed (its whole B is then NaN), else 0.
//   OP 1: B (n x k, B[b_first + bid * b_bs + i * b_ld + j]) is overwritten by A^-1 B;
//   OP 2: B (n x n) is overwritten by A^-1;
//   OP 3: B[b_first + 3 * bid + 0, 1, 2] = det, sign, log|det| (sign 0 and -inf when singular;
//   complex: the sign is det / |det|, log|det| the real part). Pivots by |re| + |im| (getrf's).
// Elements are T (real, or complex as vec2) with the sc_* helpers of linalg_scalar_*.
//#include common

alias T = {{T}};
alias R = {{R}};
const NM: u32 = {{NMAX}}u;
const OP: u32 = {{OP}}u;
const WG: u32 = 64u;
const XS: u32 = {{XS}}u;

struct Params {
    batch: u32, n: u32, k: u32, a_first: u32,
    a_ld: u32, a_bs: u32, b_first: u32, b_ld: u32,
    b_bs: u32, i_first: u32, p1: u32, p2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<T>;
@group(0) @binding(2) var<storage, read_write> B: array<T>;
@group(0) @binding(3) var<storage, read_write> info: array<u32>;

var<workgroup> a: array<T, NM * NM>;
var<workgroup> piv: array<u32, NM>;
// right-hand columns, one per invocation: xs[i * WG + lid] (OP 1, 2)
var<workgroup> xs: array<T, XS>;

{{SCALAR}}

// LU in place in workgroup memory; whether a pivot column was zero (the same in every invocation).
fn lu(n: u32, lid: u32) -> bool {
    var failed = false;
    for (var c = 0u; c < n; c++) {
        if lid == 0u {
            var best = c;
            var bv = sc_norm1(a[c * NM + c]);
            for (var i = c + 1u; i < n; i++) {
                let v = sc_norm1(a[i * NM + c]);
                if v > bv {
                    bv = v;
                    best = i;
                }
            }
            piv[c] = best;
        }
        workgroupBarrier();
        let pr = piv[c];
        if pr != c {
            for (var j = lid; j < n; j += WG) {
                let t = a[c * NM + j];
                a[c * NM + j] = a[pr * NM + j];
                a[pr * NM + j] = t;
            }
        }
        workgroupBarrier();
        let d = a[c * NM + c];
        let live = sc_nonzero(d);
        failed = failed || !live;
        if live {
            for (var i = c + 1u + lid; i < n; i += WG) {
                a[i * NM + c] = sc_div(a[i * NM + c], d);
            }
        }
        workgroupBarrier();
        let m = n - c - 1u;
        if live {
            for (var t = lid; t < m * m; t += WG) {
                let i = c + 1u + t / m;
                let j = c + 1u + t % m;
                a[i * NM + j] = a[i * NM + j] - sc_mul(a[i * NM + c], a[c * NM + j]);
            }
        }
        workgroupBarrier();
    }
    return failed;
}

// Solve in place for the column held at xs[i * WG + lid] (i < n) of this invocation.
fn lu_solve_column(n: u32, lid: u32) {
    for (var c = 0u; c < n; c++) {
        let pr = piv[c];
        let t = xs[c * WG + lid];
        xs[c * WG + lid] = xs[pr * WG + lid];
        xs[pr * WG + lid] = t;
    }
    for (var i = 0u; i < n; i++) {
        var s = xs[i * WG + lid];
        for (var q = 0u; q < i; q++) {
            s = s - sc_mul(a[i * NM + q], xs[q * WG + lid]);
        }
        xs[i * WG + lid] = s;
    }
    for (var ii = 0u; ii < n; ii++) {
        let i = n - 1u - ii;
        var s = xs[i * WG + lid];
        for (var q = i + 1u; q < n; q++) {
            s = s - sc_mul(a[i * NM + q], xs[q * WG + lid]);
        }
        xs[i * WG + lid] = sc_div(s, a[i * NM + i]);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let bid = linear_group(wid, nwg);
    if bid >= p.batch {
        return;
    }
    let n = p.n;
    let base = p.a_first + bid * p.a_bs;
    for (var t = lid; t < n * n; t += WG) {
        let i = t / n;
        let j = t % n;
        a[i * NM + j] = A[base + i * p.a_ld + j];
    }
    workgroupBarrier();
    let failed = lu(n, lid);
    if OP == 3u {
        if lid == 0u {
            var det = sc_from(R(1));
            var sign = sc_from(R(1));
            var logabs = R(0);
            var zero = false;
            for (var c = 0u; c < n; c++) {
                let u = a[c * NM + c];
                det = sc_mul(det, u);
                if piv[c] != c {
                    sign = -sign;
                    det = -det;
                }
                if sc_nonzero(u) {
                    let au = sc_abs(u);
                    sign = sc_mul(sign, sc_unit(u));
                    logabs = logabs + {{LOG}}(au);
                } else {
                    zero = true;
                }
            }
            let r = p.b_first + 3u * bid;
            B[r] = det;
            B[r + 1u] = select(sign, T(0), zero);
            B[r + 2u] = sc_from(select(logabs, {{NEG_INF}}, zero));
        }
        return;
    }
    let bbase = p.b_first + bid * p.b_bs;
    if lid == 0u {
        info[p.i_first + bid] = select(0u, 1u, failed);
    }
    let nan = sc_from({{NAN}});
    for (var col = lid; col < p.k; col += WG) {
        for (var i = 0u; i < n; i++) {
            if OP == 2u {
                xs[i * WG + lid] = select(T(0), sc_from(R(1)), i == col);
            } else {
                xs[i * WG + lid] = B[bbase + i * p.b_ld + col];
            }
        }
        lu_solve_column(n, lid);
        for (var i = 0u; i < n; i++) {
            B[bbase + i * p.b_ld + col] = select(xs[i * WG + lid], nan, failed);
        }
    }
}
