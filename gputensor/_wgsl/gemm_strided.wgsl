{{ENABLE}}
// C = alpha * A * B + beta * C on operands with arbitrary element strides: the strided variant of
// gemm.wgsl, for layouts no BLAS transpose/leading-dimension pair describes (negative steps,
// strides in both matrix dimensions, 0-stride broadcast rows or columns of A and B).
// ops_gemm.gemm_strided selects it only when an operand does not fit gemm.wgsl's column-major /
// transposed layouts; gemm.wgsl itself is untouched, so its variants render exactly as before.
//
// Element (i, j) of X (X = A: m x k, B: k x n, C: m x n) in batch q = workgroup_id.z lies at
//     x_first + q * x_bs + i * x_rs + j * x_cs
// with the strides passed as the u32 bits of signed element strides: u32 arithmetic wraps, so a
// negative stride lands on the right element of the window. The host orients the problem so that
// C's row stride is the smaller one (C^T = B^T A^T otherwise): write_quad then stores runs of
// consecutive rows. A_M_FAST / B_K_FAST choose each operand's fetch order so that consecutive
// invocations read along the operand's smaller stride (A along m or along k, B along k or n).
// The tiling, double buffering and register layout are gemm_core.wgsl's (see there).
// beta == 0 never reads C; the host passes k = 0 and alpha = 0 when A and B must not be read.
// With SPLIT_K the workgroups store raw partial tiles into C (a scratch buffer: see gemm_core)
// and gemm_combine.wgsl applies alpha, beta and C's strides.
//#include common
//#include gemm_core

struct Params {
    alpha: acc_t,
    beta: acc_t,
    m: u32,
    n: u32,
    k: u32,
    a_first: u32,
    a_rs: u32,
    a_cs: u32,
    a_bs: u32,
    b_first: u32,
    b_rs: u32,
    b_cs: u32,
    b_bs: u32,
    c_first: u32,
    c_rs: u32,
    c_cs: u32,
    c_bs: u32,
    tiles_m: u32,
    tiles_n: u32,
    splits: u32,     // split-K: depth slices (1 without)
    kt_split: u32,   // split-K: depth tiles per slice
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> A: array<{{T}}>;
@group(0) @binding(2) var<storage, read> B: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> C: array<c_t>;

const A_M_FAST: bool = {{A_M_FAST}};
const B_K_FAST: bool = {{B_K_FAST}};

// Per-workgroup state, set once by main (g_row0, g_col0, g_tid: gemm_core).
var<private> g_abase: u32;
var<private> g_bbase: u32;
var<private> g_cbase: u32;

// (i, p) of the e-th A element fetched by this invocation: consecutive invocations take
// consecutive i (A_M_FAST) or consecutive p.
fn a_coord(e: u32) -> vec2<u32> {
    let idx = g_tid + e * NT;
    if (A_M_FAST) {
        return vec2<u32>(idx % BM, idx / BM);
    }
    return vec2<u32>(idx / BK, idx % BK);
}

// (p, j) of the e-th B element: consecutive invocations take consecutive p (B_K_FAST) or j.
fn b_coord(e: u32) -> vec2<u32> {
    let idx = g_tid + e * NT;
    if (B_K_FAST) {
        return vec2<u32>(idx % BK, idx / BK);
    }
    return vec2<u32>(idx / BN, idx % BN);
}

fn a_tile_full(k0: u32) -> bool {
    return g_row0 + BM <= params.m && k0 + BK <= params.k;
}

fn b_tile_full(k0: u32) -> bool {
    return g_col0 + BN <= params.n && k0 + BK <= params.k;
}

fn load_a(e: u32, k0: u32, full: bool) -> acc_t {
    let c = a_coord(e);
    let row = g_row0 + c.x;
    let kk = k0 + c.y;
    var v = acc_t(0);
    if (full || (row < params.m && kk < params.k)) {
        v = acc_t(A[g_abase + row * params.a_rs + kk * params.a_cs]);
    }
    return v;
}

fn load_b(e: u32, k0: u32, full: bool) -> acc_t {
    let c = b_coord(e);
    let kk = k0 + c.x;
    let col = g_col0 + c.y;
    var v = acc_t(0);
    if (full || (kk < params.k && col < params.n)) {
        v = acc_t(B[g_bbase + kk * params.b_rs + col * params.b_cs]);
    }
    return v;
}

fn store_c(row: u32, col_index: u32, v: acc_t) {
    if (row < params.m) {
        let idx = col_index + row * params.c_rs;
        var r = params.alpha * v;
        if (params.beta != acc_t(0)) {
            r = r + params.beta * acc_t(C[idx]);
        }
        C[idx] = c_t(r);
    }
}

fn write_quad(row: u32, col: u32, v: vec4<acc_t>) {
    let c = g_col0 + col;
    if (c >= params.n) {
        return;
    }
    let ci = g_cbase + c * params.c_cs;
    let r = g_row0 + row;
    store_c(r, ci, v.x);
    store_c(r + 1u, ci, v.y);
    store_c(r + 2u, ci, v.z);
    store_c(r + 3u, ci, v.w);
}

@compute @workgroup_size(NT)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lin = linear_group(wid, nwg);
    let work = begin_tile(lin, params.tiles_m, params.tiles_n, (params.k + BK - 1u) / BK,
                          params.splits, params.kt_split);
    if (work.z == 0u) {
        return;
    }
    g_abase = params.a_first + wid.z * params.a_bs;
    g_bbase = params.b_first + wid.z * params.b_bs;
    g_cbase = params.c_first + wid.z * params.c_bs;
    g_tid = tid;
    begin_partial(wid.z, nwg.z, params.m, params.n);
    let tx = tid % WX;
    let ty = tid / WX;
    var acc = gemm_mainloop(work.x, work.y, tx, ty);
    write_acc(&acc, tx, ty);
}
