// Diagonal blocks of the blocked Cholesky factorization, one workgroup of TH x TH invocations
// per matrix of a stack (workgroups (q, 0): matrix q): the n x n block (n <= NB) at
// A[a_first + q * a_bs + i * ld + j] (lower triangle read) is replaced by its lower factor L
// (zeros above the diagonal), and X[x_first + q * NB * NB + i * NB + j] receives L^-1 (lower,
// zeros above; only when with_inverse is nonzero), which turns the panel's triangular solve
// into a gemm. The invocations hold the block by row strips.
//
// Invocation (tx, ty) holds elements (RR * ty + s, tx + TH * u), s, u < RR, of the block and of
// its inverse in registers: RR consecutive rows, so that once step j has passed them an
// invocation (and a whole subgroup of one ty) has nothing left to update and skips the step
// but its barrier. Step j is one barrier: the holders of column j of the block and of row j of
// the inverse publish them (two buffers, alternating per step), then every invocation with a
// row at or below j updates its elements: right-looking Cholesky for the columns right of j,
// from the same column of L forward substitution of L X = I for the columns up to j (each
// element takes one of the two updates). A pivot <= 0 sets flag[0] (the holder of the
// diagonal element, as it publishes it; NaN input is not flagged). Elements are T (real, or
// complex as vec2: A = L L^H, the diagonal's real part read) with the sc_* helpers of
// linalg_scalar_*.
//
// The other workgroups, (q, 1 + g), copy the previous step's panel (linalg_chol_finish.wgsl).

alias T = {{T}};
alias R = {{R}};
const NB: u32 = {{NB}}u;
const TH: u32 = {{TH}}u;
const RR: u32 = {{RR}}u;

//#include linalg_chol_finish

var<workgroup> col: array<T, 2u * NB>;
var<workgroup> xrow: array<T, 2u * NB>;

{{SCALAR}}

@compute @workgroup_size({{TH}}, {{TH}})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    if wid.y != 0u {
        finish_panel(wid.x, wid.y - 1u, lid.y * TH + lid.x);
        return;
    }
    let tx = lid.x;
    let r0 = lid.y * RR;
    let n = p.n;
    let a_first = p.a_first + wid.x * p.a_bs;
    let x_first = p.x_first + wid.x * NB * NB;
    let with_x = p.with_inverse != 0u;
    var a: array<T, RR * RR>;
    var x: array<T, RR * RR>;
    var lc: array<T, RR>;
    var xc: array<T, RR>;
    //#unroll
    for (var s = 0u; s < RR; s++) {
        //#unroll
        for (var u = 0u; u < RR; u++) {
            let i = r0 + s;
            let c = tx + TH * u;
            var v = T(0);
            if i < n && c <= i {
                v = A[a_first + i * p.ld + c];
            }
            a[s * RR + u] = v;
            x[s * RR + u] = select(T(0), sc_from(R(1)), i == c);
        }
    }
    for (var j = 0u; j < n; j++) {
        let b = (j & 1u) * NB;
        if tx == j % TH {
            let jq = j / TH;
            //#unroll
            for (var u = 0u; u < RR; u++) {
                if u == jq {
                    //#unroll
                    for (var s = 0u; s < RR; s++) {
                        let v = a[s * RR + u];
                        col[b + r0 + s] = v;
                        if r0 + s == j && sc_re(v) <= R(0) {
                            atomicOr(&flag[0], 1u);
                        }
                    }
                }
            }
        }
        if with_x && r0 <= j && j < r0 + RR {
            //#unroll
            for (var s = 0u; s < RR; s++) {
                if r0 + s == j {
                    //#unroll
                    for (var u = 0u; u < RR; u++) {
                        xrow[b + tx + TH * u] = x[s * RR + u];
                    }
                }
            }
        }
        workgroupBarrier();
        if r0 + RR > j {
            let ljj = sqrt(sc_re(col[b + j]));
            let inv = R(1) / ljj;
            let jq = j / TH;
            //#unroll
            for (var u = 0u; u < RR; u++) {
                lc[u] = sc_conj(col[b + tx + TH * u] * inv);
                xc[u] = xrow[b + tx + TH * u] * inv;
            }
            // Branches on the row (i against j) and on the column group (u against jq) are the
            // same for every invocation of a subgroup of one ty: each takes only its own update.
            //#unroll
            for (var s = 0u; s < RR; s++) {
                let i = r0 + s;
                if i >= j {
                    let li = col[b + i] * inv;
                    //#unroll
                    for (var u = 0u; u < RR; u++) {
                        let c = tx + TH * u;
                        let e = s * RR + u;
                        if u > jq {  // (every column right of j)
                            if c <= i {
                                a[e] = a[e] - sc_mul(li, lc[u]);
                            }
                        } else if u < jq {  // (every column left of j)
                            if with_x {
                                x[e] = select(x[e] - sc_mul(li, xc[u]), xc[u], i == j);
                            }
                        } else if c > j {
                            if c <= i {
                                a[e] = a[e] - sc_mul(li, lc[u]);
                            }
                        } else {
                            if c == j {
                                a[e] = select(li, sc_from(ljj), i == j);
                            }
                            if with_x {
                                x[e] = select(x[e] - sc_mul(li, xc[u]), xc[u], i == j);
                            }
                        }
                    }
                }
            }
        }
    }
    //#unroll
    for (var s = 0u; s < RR; s++) {
        //#unroll
        for (var u = 0u; u < RR; u++) {
            let i = r0 + s;
            let c = tx + TH * u;
            if i < n && c < n {
                A[a_first + i * p.ld + c] = select(T(0), a[s * RR + u], c <= i);
                if with_x {
                    X[x_first + i * NB + c] = x[s * RR + u];
                }
            }
        }
    }
}
