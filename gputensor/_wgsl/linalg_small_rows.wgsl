// Batched small factorizations with a row per invocation: NM invocations per n x n matrix
// (n <= NM), G = 64 / NM matrices per workgroup; invocation r holds row r of its matrix (and of
// the right-hand sides) in registers. Matrix `mat` is A[a_first + mat * a_bs + i * a_ld + j].
//
// OP 0 (Cholesky, right-looking): at step c row c's owner takes the square root of its
//   diagonal, the rows below scale their column-c entry, publish it, and update their entries
//   left of the diagonal; L is written to B (n x n, B[b_first + mat * b_bs + i * b_ld + j], zeros
//   above; A is only read). A pivot <= 0 marks the matrix failed (NaN input is not).
// OP 1, 2 (Gauss-Jordan with partial pivoting): at step c the not-yet-pivoted row of largest
//   |column c| (the first such row; a NaN entry wins over the rows before it) becomes the pivot row of c, every
//   other row is eliminated against it (above and below), and at the end the row pivoted at
//   step s holds unknown s: OP 1 overwrites B (n x k, k <= KM, B[b_first + mat * b_bs + i * b_ld
//   + j]) by A^-1 B, OP 2 writes A^-1 to B (n x n). A pivot column of zeros marks the matrix
//   failed and is skipped.
// Every matrix writes its info word, info[i_first + mat]: 1 when it failed, else 0 (no prior
// clear needed); a failed matrix's result (its whole B) is NaN.
// Elements are T (real, or complex as vec2: Cholesky of Hermitian A = L L^H, pivots by |re| +
// |im|) with the sc_* helpers of linalg_scalar_*.
//#include common

alias T = {{T}};
alias R = {{R}};
const NM: u32 = {{NM}}u;
const G: u32 = {{G}}u;
const KM: u32 = {{KM}}u;
const OP: u32 = {{OP}}u;
const WG: u32 = 64u;
const S: u32 = NM + KM;

struct Params {
    batch: u32, n: u32, k: u32, a_first: u32,
    a_ld: u32, a_bs: u32, b_first: u32, b_ld: u32,
    b_bs: u32, i_first: u32, p1: u32, p2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<T>;
@group(0) @binding(2) var<storage, read_write> B: array<T>;
@group(0) @binding(3) var<storage, read_write> info: array<u32>;

// candidates of the pivot search (Gauss-Jordan) / the published column, two buffers (Cholesky)
var<workgroup> cand: array<T, 2u * WG>;
// the pivot row of each matrix of the workgroup: its A part, then its B part
var<workgroup> prow: array<T, G * S>;
// whether each matrix of the workgroup failed (written by one invocation per step)
var<workgroup> bad: array<u32, G>;

fn entry(a: ptr<function, array<T, NM>>, c: u32) -> T {
    var v = T(0);
    //#unroll
    for (var q = 0u; q < NM; q++) {
        if q == c {
            v = (*a)[q];
        }
    }
    return v;
}

{{SCALAR}}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = lid / NM;
    let r = lid % NM;
    let mat = linear_group(wid, nwg) * G + g;
    let n = p.n;
    let live = mat < p.batch && r < n;
    let base = p.a_first + mat * p.a_bs + r * p.a_ld;
    let nan = sc_from({{NAN}});
    if r == 0u {
        bad[g] = 0u;
    }
    var a: array<T, NM>;
    //#unroll
    for (var q = 0u; q < NM; q++) {
        a[q] = T(0);
        if live && q < n && (OP != 0u || q <= r) {
            a[q] = A[base + q];
        }
    }
    if OP == 0u {
        for (var c = 0u; c < n; c++) {
            let buf = (c & 1u) * WG + g * NM;
            if r == c && live {
                let d = sc_re(entry(&a, c));
                if d <= R(0) {
                    bad[g] = 1u;
                }
                cand[buf + c] = sc_from(sqrt(d));
            }
            workgroupBarrier();
            let lcc = sc_re(cand[buf + c]);
            var l = T(0);
            if r > c && live {
                l = entry(&a, c) / lcc;
                cand[buf + r] = l;
            }
            workgroupBarrier();
            if r > c && live {
                //#unroll
                for (var q = 0u; q < NM; q++) {
                    if q > c && q <= r {
                        a[q] = a[q] - sc_mul(l, sc_conj(cand[buf + q]));
                    }
                    if q == c {
                        a[q] = l;
                    }
                }
            } else if r == c && live {
                //#unroll
                for (var q = 0u; q < NM; q++) {
                    if q == c {
                        a[q] = sc_from(lcc);
                    }
                }
            }
        }
        if live {
            let failed = bad[g] != 0u;
            let out = p.b_first + mat * p.b_bs + r * p.b_ld;
            //#unroll
            for (var q = 0u; q < NM; q++) {
                if q < n {
                    B[out + q] = select(a[q], nan, failed);
                }
            }
            if r == 0u {
                info[p.i_first + mat] = select(0u, 1u, failed);
            }
        }
        return;
    }
    var x: array<T, KM>;
    let bbase = p.b_first + mat * p.b_bs;
    //#unroll
    for (var q = 0u; q < KM; q++) {
        x[q] = T(0);
        if live && q < p.k {
            if OP == 2u {
                x[q] = select(T(0), sc_from(R(1)), q == r);
            } else {
                x[q] = B[bbase + r * p.b_ld + q];
            }
        }
    }
    var done = !live;
    var step = 0u;
    let pb = g * S;
    for (var c = 0u; c < n; c++) {
        var v = R(-1);  // (done rows)
        if !done {
            v = sc_norm1(entry(&a, c));
        }
        cand[lid] = sc_from(v);
        workgroupBarrier();
        // the first available row, replaced by any later one that is not smaller or equal (NaN)
        var best = R(0);
        var pr = NM;
        //#unroll
        for (var q = 0u; q < NM; q++) {
            let cv = sc_re(cand[g * NM + q]);
            if !(cv == R(-1)) && (pr == NM || !(cv <= best)) {
                best = cv;
                pr = q;
            }
        }
        if r == pr && !done {
            //#unroll
            for (var q = 0u; q < NM; q++) {
                prow[pb + q] = a[q];
            }
            //#unroll
            for (var q = 0u; q < KM; q++) {
                prow[pb + NM + q] = x[q];
            }
            done = true;
            step = c;
            if best == R(0) {
                bad[g] = 1u;
            }
        }
        workgroupBarrier();
        let d = prow[pb + c];
        if live && r != pr && sc_nonzero(d) {
            let f = sc_div(entry(&a, c), d);
            //#unroll
            for (var q = 0u; q < NM; q++) {
                a[q] = select(a[q] - sc_mul(f, prow[pb + q]), T(0), q == c);
            }
            //#unroll
            for (var q = 0u; q < KM; q++) {
                x[q] = x[q] - sc_mul(f, prow[pb + NM + q]);
            }
        }
    }
    if live {
        let failed = bad[g] != 0u;
        let d = entry(&a, step);
        //#unroll
        for (var q = 0u; q < KM; q++) {
            if q < p.k {
                B[bbase + step * p.b_ld + q] = select(sc_div(x[q], d), nan, failed);
            }
        }
        if r == 0u {
            info[p.i_first + mat] = select(0u, 1u, failed);
        }
    }
}
