// Integer matrix product (gputensor/_backend/ops_matmul_int.py), NumPy semantics:
//
//     C[q, i, j] = sum_p A[q, i, p] * B[q, p, j]      (i < m, j < n, p < k, q = workgroup_id.z)
//
// computed in the accumulation type acc_t = {{ACC}} (i32, u32, i64 or u64): every product and
// every sum wraps modulo 2^bits, exactly as NumPy's integer matmul. Operands have any integer
// storage type; 8- and 16-bit ones are packed in u32 words and unpacked by the loads of
// wgsl_types.py (LOAD_A / LOAD_B), then converted to acc_t. C is stored as acc_t;
// params.accumulate != 0 adds the product to C (the host splits k over several dispatches when
// an operand is larger than one binding).
//
// Element strides may have any sign: the host passes their two's-complement u32 bits, and u32
// arithmetic wraps, so `first + i * stride` lands on the right element of the window.
//
// Tiling (the design of gemm_core.wgsl with integer multiply-add and a row-major C): one
// workgroup computes a BM x BN tile of C. Its NT = (BM/TM)*(BN/TN) invocations form a WY x WX
// grid (WY = BM/TM along m, WX = BN/TN along n); invocation (ty, tx) owns the TM x TN micro-tile
// made of the row quads (ty + r*WY)*4 .. +3 (r < TM/4) and the column quads (tx + s*WX)*4 .. +3
// (s < TN/4). Accumulators are vec4 along n, so C is written in runs of 4 columns and
// consecutive invocations write consecutive runs. BK-deep slices of A (staged as As[p][i]) and B
// (as Bs[p][j]) are double-buffered in workgroup memory, rows padded by one vec4: while one
// slice is multiplied the next is fetched into registers, so each K step needs one barrier.
// A_K_FAST / B_N_FAST choose the fetch order so that consecutive invocations read neighbouring
// addresses (A's k stride smaller than its m stride: fetch along k; B's n stride smaller than its
// k stride: fetch along n). Register state lives in named struct fields and every per-element
// step is written out with constant guards: no function-scope array is indexed dynamically.
//#include common

//#include matmul_int_params

const BM: u32 = {{BM}}u;
const BN: u32 = {{BN}}u;
const BK: u32 = {{BK}}u;
const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const WY: u32 = BM / TM;              // invocations along m
const WX: u32 = BN / TN;              // invocations along n
const NT: u32 = WX * WY;              // invocations per workgroup
const TM4: u32 = TM / 4u;             // row quads per invocation (1 or 2)
const TN4: u32 = TN / 4u;             // column quads per invocation (1 or 2)
const SA4: u32 = BM / 4u + 1u;        // vec4 per staged row of A (one vec4 of padding)
const SB4: u32 = BN / 4u + 1u;
const LA: u32 = BM * BK / NT;         // A elements fetched per invocation per K step (1..8)
const LB: u32 = BK * BN / NT;         // B elements fetched per invocation per K step (1..8)
const GROUP_M: u32 = 8u;              // tile swizzle: 8 tile-rows share B tiles in cache
const A_K_FAST: bool = {{A_K_FAST}};
const B_N_FAST: bool = {{B_N_FAST}};

var<workgroup> As: array<vec4<acc_t>, 2u * BK * SA4>;
var<workgroup> Bs: array<vec4<acc_t>, 2u * BK * SB4>;

// Accumulators: c<r><s> is row r (0..7) of the micro-tile, column quad s (0..1).
struct Acc {
    c00: vec4<acc_t>, c01: vec4<acc_t>, c10: vec4<acc_t>, c11: vec4<acc_t>,
    c20: vec4<acc_t>, c21: vec4<acc_t>, c30: vec4<acc_t>, c31: vec4<acc_t>,
    c40: vec4<acc_t>, c41: vec4<acc_t>, c50: vec4<acc_t>, c51: vec4<acc_t>,
    c60: vec4<acc_t>, c61: vec4<acc_t>, c70: vec4<acc_t>, c71: vec4<acc_t>,
}

// Values fetched for the next K step: A elements 0..7 in a0.xyzw, a1.xyzw; B likewise.
struct Regs {
    a0: vec4<acc_t>, a1: vec4<acc_t>, b0: vec4<acc_t>, b1: vec4<acc_t>,
}

// Per-workgroup state, set once by main.
var<private> g_abase: u32;
var<private> g_bbase: u32;
var<private> g_cbase: u32;
var<private> g_row0: u32;
var<private> g_col0: u32;
var<private> g_tid: u32;

fn load_a_elem(i: u32) -> acc_t {
    return {{LOAD_A}};
}

fn load_b_elem(i: u32) -> acc_t {
    return {{LOAD_B}};
}

//#include tile_swizzle

// (i, p) (tile-relative) of the e-th A element fetched by this invocation.
fn a_coord(e: u32) -> vec2<u32> {
    let idx = g_tid + e * NT;
    if (A_K_FAST) {
        return vec2<u32>(idx / BK, idx % BK);
    }
    return vec2<u32>(idx % BM, idx / BM);
}

// (p, j) (tile-relative) of the e-th B element fetched by this invocation.
fn b_coord(e: u32) -> vec2<u32> {
    let idx = g_tid + e * NT;
    if (B_N_FAST) {
        return vec2<u32>(idx / BN, idx % BN);
    }
    return vec2<u32>(idx % BK, idx / BK);
}

fn load_a(e: u32, k0: u32, full: bool) -> acc_t {
    let c = a_coord(e);
    let row = g_row0 + c.x;
    let kk = k0 + c.y;
    var v = acc_t(0);
    if (full || (row < params.m && kk < params.k)) {
        v = load_a_elem(g_abase + row * params.a_rs + kk * params.a_cs);
    }
    return v;
}

fn load_b(e: u32, k0: u32, full: bool) -> acc_t {
    let c = b_coord(e);
    let kk = k0 + c.x;
    let col = g_col0 + c.y;
    var v = acc_t(0);
    if (full || (kk < params.k && col < params.n)) {
        v = load_b_elem(g_bbase + kk * params.b_rs + col * params.b_cs);
    }
    return v;
}

fn fetch_tiles(r: ptr<function, Regs>, k0: u32) {
    let fa = g_row0 + BM <= params.m && k0 + BK <= params.k;
    let fb = g_col0 + BN <= params.n && k0 + BK <= params.k;
    (*r).a0.x = load_a(0u, k0, fa);
    if (LA > 1u) { (*r).a0.y = load_a(1u, k0, fa); }
    if (LA > 2u) { (*r).a0.z = load_a(2u, k0, fa); }
    if (LA > 3u) { (*r).a0.w = load_a(3u, k0, fa); }
    if (LA > 4u) { (*r).a1.x = load_a(4u, k0, fa); }
    if (LA > 5u) { (*r).a1.y = load_a(5u, k0, fa); }
    if (LA > 6u) { (*r).a1.z = load_a(6u, k0, fa); }
    if (LA > 7u) { (*r).a1.w = load_a(7u, k0, fa); }
    (*r).b0.x = load_b(0u, k0, fb);
    if (LB > 1u) { (*r).b0.y = load_b(1u, k0, fb); }
    if (LB > 2u) { (*r).b0.z = load_b(2u, k0, fb); }
    if (LB > 3u) { (*r).b0.w = load_b(3u, k0, fb); }
    if (LB > 4u) { (*r).b1.x = load_b(4u, k0, fb); }
    if (LB > 5u) { (*r).b1.y = load_b(5u, k0, fb); }
    if (LB > 6u) { (*r).b1.z = load_b(6u, k0, fb); }
    if (LB > 7u) { (*r).b1.w = load_b(7u, k0, fb); }
}

fn stage_a(buf: u32, e: u32, v: acc_t) {
    let c = a_coord(e);
    As[(buf * BK + c.y) * SA4 + c.x / 4u][c.x % 4u] = v;
}

fn stage_b(buf: u32, e: u32, v: acc_t) {
    let c = b_coord(e);
    Bs[(buf * BK + c.x) * SB4 + c.y / 4u][c.y % 4u] = v;
}

fn stage_tiles(r: ptr<function, Regs>, buf: u32) {
    stage_a(buf, 0u, (*r).a0.x);
    if (LA > 1u) { stage_a(buf, 1u, (*r).a0.y); }
    if (LA > 2u) { stage_a(buf, 2u, (*r).a0.z); }
    if (LA > 3u) { stage_a(buf, 3u, (*r).a0.w); }
    if (LA > 4u) { stage_a(buf, 4u, (*r).a1.x); }
    if (LA > 5u) { stage_a(buf, 5u, (*r).a1.y); }
    if (LA > 6u) { stage_a(buf, 6u, (*r).a1.z); }
    if (LA > 7u) { stage_a(buf, 7u, (*r).a1.w); }
    stage_b(buf, 0u, (*r).b0.x);
    if (LB > 1u) { stage_b(buf, 1u, (*r).b0.y); }
    if (LB > 2u) { stage_b(buf, 2u, (*r).b0.z); }
    if (LB > 3u) { stage_b(buf, 3u, (*r).b0.w); }
    if (LB > 4u) { stage_b(buf, 4u, (*r).b1.x); }
    if (LB > 5u) { stage_b(buf, 5u, (*r).b1.y); }
    if (LB > 6u) { stage_b(buf, 6u, (*r).b1.z); }
    if (LB > 7u) { stage_b(buf, 7u, (*r).b1.w); }
}

// acc += (rows a0.xyzw, a1.xyzw) x (column quads b0, b1) for one depth step (wrapping).
fn mma_step(acc: ptr<function, Acc>, a0: vec4<acc_t>, a1: vec4<acc_t>, b0: vec4<acc_t>, b1: vec4<acc_t>) {
    (*acc).c00 += b0 * a0.x;
    (*acc).c10 += b0 * a0.y;
    (*acc).c20 += b0 * a0.z;
    (*acc).c30 += b0 * a0.w;
    if (TN4 > 1u) {
        (*acc).c01 += b1 * a0.x;
        (*acc).c11 += b1 * a0.y;
        (*acc).c21 += b1 * a0.z;
        (*acc).c31 += b1 * a0.w;
    }
    if (TM4 > 1u) {
        (*acc).c40 += b0 * a1.x;
        (*acc).c50 += b0 * a1.y;
        (*acc).c60 += b0 * a1.z;
        (*acc).c70 += b0 * a1.w;
        if (TN4 > 1u) {
            (*acc).c41 += b1 * a1.x;
            (*acc).c51 += b1 * a1.y;
            (*acc).c61 += b1 * a1.z;
            (*acc).c71 += b1 * a1.w;
        }
    }
}

// acc += As[buf] * Bs[buf] for the micro-tile of invocation (ty, tx).
fn mma_tile(acc: ptr<function, Acc>, buf: u32, tx: u32, ty: u32) {
    var ai = buf * BK * SA4 + ty;
    var bi = buf * BK * SB4 + tx;
    for (var p = 0u; p < BK; p++) {
        let a0 = As[ai];
        var a1 = a0;
        if (TM4 > 1u) { a1 = As[ai + WY]; }
        let b0 = Bs[bi];
        var b1 = b0;
        if (TN4 > 1u) { b1 = Bs[bi + WX]; }
        mma_step(acc, a0, a1, b0, b1);
        ai += SA4;
        bi += SB4;
    }
}

fn store_c(row: u32, col: u32, v: acc_t) {
    if (col < params.n) {
        let idx = g_cbase + row * params.c_rs + col * params.c_cs;
        if (params.accumulate != 0u) {
            C[idx] = C[idx] + v;
        } else {
            C[idx] = v;
        }
    }
}

// Row `row` (tile-relative), columns col .. col+3 (tile-relative).
fn write_run(row: u32, col: u32, v: vec4<acc_t>) {
    let r = g_row0 + row;
    if (r >= params.m) {
        return;
    }
    let c = g_col0 + col;
    store_c(r, c, v.x);
    store_c(r, c + 1u, v.y);
    store_c(r, c + 2u, v.z);
    store_c(r, c + 3u, v.w);
}

fn write_acc(acc: ptr<function, Acc>, tx: u32, ty: u32) {
    let r0 = ty * 4u;
    let r1 = (ty + WY) * 4u;
    let s0 = tx * 4u;
    let s1 = (tx + WX) * 4u;
    write_run(r0, s0, (*acc).c00);
    write_run(r0 + 1u, s0, (*acc).c10);
    write_run(r0 + 2u, s0, (*acc).c20);
    write_run(r0 + 3u, s0, (*acc).c30);
    if (TN4 > 1u) {
        write_run(r0, s1, (*acc).c01);
        write_run(r0 + 1u, s1, (*acc).c11);
        write_run(r0 + 2u, s1, (*acc).c21);
        write_run(r0 + 3u, s1, (*acc).c31);
    }
    if (TM4 > 1u) {
        write_run(r1, s0, (*acc).c40);
        write_run(r1 + 1u, s0, (*acc).c50);
        write_run(r1 + 2u, s0, (*acc).c60);
        write_run(r1 + 3u, s0, (*acc).c70);
        if (TN4 > 1u) {
            write_run(r1, s1, (*acc).c41);
            write_run(r1 + 1u, s1, (*acc).c51);
            write_run(r1 + 2u, s1, (*acc).c61);
            write_run(r1 + 3u, s1, (*acc).c71);
        }
    }
}

@compute @workgroup_size(NT)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lin = linear_group(wid, nwg);
    if (lin >= params.tiles_m * params.tiles_n) {
        return;
    }
    let tile = swizzle_tile(lin, params.tiles_m, params.tiles_n);
    g_row0 = tile.x * BM;
    g_col0 = tile.y * BN;
    g_abase = params.a_first + wid.z * params.a_bs;
    g_bbase = params.b_first + wid.z * params.b_bs;
    g_cbase = params.c_first + wid.z * params.c_bs;
    g_tid = tid;
    let tx = tid % WX;
    let ty = tid / WX;

    var acc: Acc;
    var regs: Regs;
    let ktiles = (params.k + BK - 1u) / BK;
    if (ktiles > 0u) {
        fetch_tiles(&regs, 0u);
        stage_tiles(&regs, 0u);
        workgroupBarrier();
        for (var kt = 0u; kt < ktiles; kt++) {
            let cur = kt & 1u;
            let more = kt + 1u < ktiles;
            if (more) {
                fetch_tiles(&regs, (kt + 1u) * BK);
            }
            mma_tile(&acc, cur, tx, ty);
            if (more) {
                stage_tiles(&regs, cur ^ 1u);
            }
            workgroupBarrier();
        }
    }
    write_acc(&acc, tx, ty);
}
