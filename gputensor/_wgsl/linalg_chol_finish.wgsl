// The parameters, bindings and panel copy of the diagonal-block kernel of the blocked Cholesky
// factorization (linalg_chol_rows.wgsl), which declares T, NB and TH before it.
//
// Workgroups (q, 1 + g) of a diagonal block's dispatch finish the previous step of matrix q:
// the c_rows x c_cols panel W[c_w_first + q * c_w_bs + i * c_cols + j] (computed into scratch)
// goes into A below the previous diagonal block, whose element (0, 0) is
// A[a_first - c_back + q * a_bs], and the mirror of the panel right of that block is set to 0
// (the factor's strict upper triangle); each copies CH elements of the panel and clears CH of
// the mirror, both in row-major order. The previous panel, its mirror and this diagonal block
// are disjoint regions of A.

struct Params {
    n: u32, a_first: u32, ld: u32, x_first: u32, a_bs: u32, with_inverse: u32, c_rows: u32, c_cols: u32,
    c_w_first: u32, c_w_bs: u32, c_back: u32, p0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> A: array<T>;
@group(0) @binding(2) var<storage, read_write> X: array<T>;
@group(0) @binding(3) var<storage, read_write> flag: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read> W: array<T>;

const CH: u32 = TH * TH * 4u;

// The previous step's panel copy and mirror clear (workgroup (q, 1 + g), invocation lin).
fn finish_panel(q: u32, g: u32, lin: u32) {
    let per = p.c_rows * p.c_cols;
    let top = p.a_first - p.c_back + q * p.a_bs;
    for (var r = g * CH + lin; r < min(per, (g + 1u) * CH); r += TH * TH) {
        A[top + (p.c_cols + r / p.c_cols) * p.ld + r % p.c_cols] = W[p.c_w_first + q * p.c_w_bs + r];
        A[top + p.c_cols + (r / p.c_rows) * p.ld + r % p.c_rows] = T(0);
    }
}
