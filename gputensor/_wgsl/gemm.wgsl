{{ENABLE}}
// C = alpha * op(A) * op(B) + beta * C, column-major with leading dimensions (cublasSgemm),
// for one block of a (possibly batched) problem: batch index = workgroup_id.z.
// Storage type {{T}}, accumulation in acc_t. TRANS_A / TRANS_B pick the load pattern so that
// consecutive invocations always read consecutive addresses of the stored matrix.
// beta == 0 never reads C. The host passes k = 0 (and alpha = 0) when op(A)*op(B) must not be
// read (k == 0 or alpha == 0). alpha and beta are acc_t (f64 fields for float64 data).
// With SPLIT_K the workgroups store raw partial tiles into C (a scratch buffer: see gemm_core)
// and gemm_combine.wgsl applies alpha and beta. TRI 1 (2): only the tiles that reach C's upper
// (lower) triangle, row <= column (row >= column), run (a symmetric rank-k update's half).
//#include common
//#include gemm_core

struct Params {
    alpha: acc_t,
    beta: acc_t,
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    a_first: u32,
    b_first: u32,
    c_first: u32,
    stride_a: u32,
    stride_b: u32,
    stride_c: u32,
    tiles_m: u32,
    tiles_n: u32,
    splits: u32,     // split-K: depth slices (1 without)
    kt_split: u32,   // split-K: depth tiles per slice
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> A: array<{{T}}>;
@group(0) @binding(2) var<storage, read> B: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> C: array<c_t>;

const TRANS_A: bool = {{TRANS_A}};
const TRANS_B: bool = {{TRANS_B}};
const TRI: u32 = {{TRI}}u;

// Per-workgroup state, set once by main (g_row0, g_col0, g_tid: gemm_core).
var<private> g_abase: u32;
var<private> g_bbase: u32;
var<private> g_cbase: u32;

// (i, p) of the e-th A element fetched by this invocation: consecutive invocations take
// consecutive elements of a stored column (NO_TRANS: along m; TRANS: along k).
fn a_coord(e: u32) -> vec2<u32> {
    let idx = g_tid + e * NT;
    if (TRANS_A) {
        return vec2<u32>(idx / BK, idx % BK);
    }
    return vec2<u32>(idx % BM, idx / BM);
}

// (p, j) of the e-th B element (NO_TRANS: along k; TRANS: along n).
fn b_coord(e: u32) -> vec2<u32> {
    let idx = g_tid + e * NT;
    if (TRANS_B) {
        return vec2<u32>(idx / BN, idx % BN);
    }
    return vec2<u32>(idx % BK, idx / BK);
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
        if (TRANS_A) {
            v = acc_t(A[g_abase + kk + row * params.lda]);
        } else {
            v = acc_t(A[g_abase + row + kk * params.lda]);
        }
    }
    return v;
}

fn load_b(e: u32, k0: u32, full: bool) -> acc_t {
    let c = b_coord(e);
    let kk = k0 + c.x;
    let col = g_col0 + c.y;
    var v = acc_t(0);
    if (full || (kk < params.k && col < params.n)) {
        if (TRANS_B) {
            v = acc_t(B[g_bbase + col + kk * params.ldb]);
        } else {
            v = acc_t(B[g_bbase + kk + col * params.ldb]);
        }
    }
    return v;
}

fn store_c(row: u32, col_index: u32, v: acc_t) {
    if (row < params.m) {
        let idx = col_index + row;
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
    let ci = g_cbase + c * params.ldc;
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
    if (TRI != 0u) {
        let tile = swizzle_tile(lin % (params.tiles_m * params.tiles_n), params.tiles_m, params.tiles_n);
        let i0 = tile.x * BM;
        let j0 = tile.y * BN;
        if ((TRI == 1u && i0 >= j0 + BN) || (TRI == 2u && j0 >= i0 + BM)) {
            return;
        }
    }
    g_abase = params.a_first + wid.z * params.stride_a;
    g_bbase = params.b_first + wid.z * params.stride_b;
    g_cbase = params.c_first + wid.z * params.stride_c;
    g_tid = tid;
    begin_partial(wid.z, nwg.z, params.m, params.n);
    let tx = tid % WX;
    let ty = tid / WX;
    var acc = gemm_mainloop(work.x, work.y, tx, ty);
    write_acc(&acc, tx, ty);
}
