// Register-tiled shared-memory GEMM core, pulled in with `//#include gemm_core` by gemm.wgsl
// and conv2d.wgsl. The including kernel supplies, for the current workgroup:
//   fn a_coord(e: u32) -> vec2<u32>        (i, p) of the e-th A element this invocation fetches
//   fn b_coord(e: u32) -> vec2<u32>        (p, j) of the e-th B element
//   fn a_tile_full(k0: u32) -> bool        the A tile at depth k0 lies inside the matrix
//   fn b_tile_full(k0: u32) -> bool
//   fn load_a(e: u32, k0: u32, full: bool) -> acc_t   the value (0 outside the matrix)
//   fn load_b(e: u32, k0: u32, full: bool) -> acc_t
//   fn write_quad(row: u32, col: u32, v: vec4<acc_t>)  rows row..row+3 of column col (tile-relative)
//   var<storage, read_write> C: array<c_t>            its output binding (see split-K below)
// and its main calls begin_tile, then gemm_mainloop over the depth tiles begin_tile returns,
// then write_acc. The core calls load_a (and load_b) for e = 0, 1, ... in order within one
// fetch, and fetches k0 = kt0*BK, (kt0+1)*BK, ... in order: a loader may carry state from one
// call to the next (conv2d.wgsl decodes its patch offsets incrementally).
//
// One workgroup computes a BM x BN tile of a column-major C. Its NT = (BM/TM)*(BN/TN)
// invocations form a WX x WY grid; invocation (tx, ty) owns the TM x TN micro-tile made of the
// row quads (tx + r*WX)*4 .. +3 (r < TM/4) and column quads (ty + s*WY)*4 .. +3 (s < TN/4), so
// the shared-memory reads are vec4 (one 128-bit read per quad) and consecutive invocations
// touch consecutive quads: no bank conflicts, and C is written in coalesced runs.
//
// The K loop stages BK-deep slices of op(A) (as As[p][i]) and op(B) (as Bs[p][j]) in two
// workgroup buffers: while the tile in one buffer is multiplied, the next slice is fetched from
// global memory into registers and then stored into the other buffer, so each K step needs a
// single barrier. Values are staged in the accumulation type (f32 for f16/f32 data, f64 for f64).
// Rows of the staging arrays are padded by one quad so that transposed stores spread over banks.
//
// Split-K (SPLIT_K = true): the grid holds `splits` copies of the tile grid, split-major
// (workgroup lin = s * tiles + tile); copy s multiplies the depth tiles
// [s * kt_split, min((s + 1) * kt_split, ktiles)) only. Such a workgroup applies no epilogue: it
// stores its raw acc_t tile into the kernel's output binding C, which the host then binds to a
// scratch buffer of acc_t (c_t = acc_t), as partial matrix s * nz + z (z < nz: the batch index)
// of column-major m x n partial matrices (element (i, j) of matrix q at (q * n + j) * m + i).
// gemm_combine.wgsl then sums the splits in a fixed order and applies the epilogue. Without
// split-K (SPLIT_K = false, c_t = the storage type) the kernel's write_quad gets the tile.
//
// Register state lives in structs with named fields and every per-element step is written out
// with constant guards (TM, TN in {4, 8}; at most 8 fetches per operand and invocation): no
// function-scope array is ever indexed dynamically, so drivers that do not unroll loops still
// keep the accumulators in registers.

alias acc_t = {{ACC}};

const BM: u32 = {{BM}}u;
const BN: u32 = {{BN}}u;
const BK: u32 = {{BK}}u;
const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const WX: u32 = BM / TM;              // invocations along m
const WY: u32 = BN / TN;              // invocations along n
const NT: u32 = WX * WY;              // invocations per workgroup
const TM4: u32 = TM / 4u;             // row quads per invocation (1 or 2)
const TN4: u32 = TN / 4u;             // column quads per invocation (1 or 2)
const SA4: u32 = BM / 4u + 1u;        // vec4 per staged row of A (one vec4 of padding)
const SB4: u32 = BN / 4u + 1u;
const LA: u32 = BM * BK / NT;         // A elements fetched per invocation per K step (1..8)
const LB: u32 = BK * BN / NT;         // B elements fetched per invocation per K step (1..8)
const GROUP_M: u32 = 8u;              // tile swizzle: 8 tile-rows share B tiles in cache
const SPLIT_K: bool = {{SPLIT_K}};
alias c_t = {{C_T}};                  // element type of the kernel's output binding C

// Per-workgroup state, set by begin_tile (g_tid by the kernel's main).
var<private> g_row0: u32;             // first row (m) of this workgroup's tile
var<private> g_col0: u32;             // first column (n)
var<private> g_tid: u32;              // local invocation index
var<private> g_slice: u32;            // split-K: this workgroup's depth slice
var<private> g_part: u32;             // split-K: index of this tile's partial matrix element (0, 0)
var<private> g_part_m: u32;           // split-K: rows of the partial matrices
var<private> g_part_n: u32;           // split-K: columns

// The staging arrays As, Bs (2 * BK rows of SA4 / SB4 quads) and their accessors put_a, put_b,
// quad_a, quad_b: gemm_stage_quads.wgsl (vec4 quads) or gemm_stage_pairs.wgsl (two planes of vec2
// pairs, for f64), chosen by the host.
{{STAGING}}

// Accumulators: c<s><r> is column s (0..7) of the micro-tile, row quad r (0..1).
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

//#include tile_swizzle

// Set g_row0, g_col0 (and g_slice) for workgroup `lin` of a grid of tiles_m x tiles_n tiles
// (times `splits` with SPLIT_K) over `ktiles` depth tiles. Returns (kt0, kt1, ok): the depth tiles
// [kt0, kt1) this workgroup multiplies, and ok = 0 for a workgroup past the work (fold_grid may
// launch a few), which must return at once.
fn begin_tile(lin: u32, tiles_m: u32, tiles_n: u32, ktiles: u32, splits: u32, kt_split: u32) -> vec3<u32> {
    let tiles = tiles_m * tiles_n;
    var t = lin;
    var work = vec3<u32>(0u, ktiles, select(0u, 1u, lin < tiles));
    if (SPLIT_K) {
        let s = lin / tiles;
        t = lin - s * tiles;
        let kt0 = s * kt_split;
        work = vec3<u32>(kt0, min(ktiles, kt0 + kt_split), select(0u, 1u, s < splits));
        g_slice = s;
    }
    let tile = swizzle_tile(t, tiles_m, tiles_n);
    g_row0 = tile.x * BM;
    g_col0 = tile.y * BN;
    return work;
}

// Split-K: this workgroup's partial matrix is s * nz + z of m x n ones (no effect otherwise).
fn begin_partial(z: u32, nz: u32, m: u32, n: u32) {
    if (SPLIT_K) {
        g_part = (g_slice * nz + z) * n * m;
        g_part_m = m;
        g_part_n = n;
    }
}

fn fetch_tiles(r: ptr<function, Regs>, k0: u32) {
    let fa = a_tile_full(k0);
    let fb = b_tile_full(k0);
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
    put_a((buf * BK + c.y) * SA4 + c.x / 4u, c.x % 4u, v);
}

fn stage_b(buf: u32, e: u32, v: acc_t) {
    let c = b_coord(e);
    put_b((buf * BK + c.x) * SB4 + c.y / 4u, c.y % 4u, v);
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

// acc += (row quads a0, a1) x (columns b0.xyzw, b1.xyzw) for one depth step.
fn mma_step(acc: ptr<function, Acc>, a0: vec4<acc_t>, a1: vec4<acc_t>, b0: vec4<acc_t>, b1: vec4<acc_t>) {
    (*acc).c00 = fma(a0, vec4<acc_t>(b0.x), (*acc).c00);
    (*acc).c10 = fma(a0, vec4<acc_t>(b0.y), (*acc).c10);
    (*acc).c20 = fma(a0, vec4<acc_t>(b0.z), (*acc).c20);
    (*acc).c30 = fma(a0, vec4<acc_t>(b0.w), (*acc).c30);
    if (TM4 > 1u) {
        (*acc).c01 = fma(a1, vec4<acc_t>(b0.x), (*acc).c01);
        (*acc).c11 = fma(a1, vec4<acc_t>(b0.y), (*acc).c11);
        (*acc).c21 = fma(a1, vec4<acc_t>(b0.z), (*acc).c21);
        (*acc).c31 = fma(a1, vec4<acc_t>(b0.w), (*acc).c31);
    }
    if (TN4 > 1u) {
        (*acc).c40 = fma(a0, vec4<acc_t>(b1.x), (*acc).c40);
        (*acc).c50 = fma(a0, vec4<acc_t>(b1.y), (*acc).c50);
        (*acc).c60 = fma(a0, vec4<acc_t>(b1.z), (*acc).c60);
        (*acc).c70 = fma(a0, vec4<acc_t>(b1.w), (*acc).c70);
        if (TM4 > 1u) {
            (*acc).c41 = fma(a1, vec4<acc_t>(b1.x), (*acc).c41);
            (*acc).c51 = fma(a1, vec4<acc_t>(b1.y), (*acc).c51);
            (*acc).c61 = fma(a1, vec4<acc_t>(b1.z), (*acc).c61);
            (*acc).c71 = fma(a1, vec4<acc_t>(b1.w), (*acc).c71);
        }
    }
}

// acc += As[buf] * Bs[buf] for the micro-tile of invocation (tx, ty).
fn mma_tile(acc: ptr<function, Acc>, buf: u32, tx: u32, ty: u32) {
    var ai = buf * BK * SA4 + tx;
    var bi = buf * BK * SB4 + ty;
    //#unroll
    for (var p = 0u; p < BK; p++) {
        let a0 = quad_a(ai);
        var a1 = a0;
        if (TM4 > 1u) { a1 = quad_a(ai + WX); }
        let b0 = quad_b(bi);
        var b1 = b0;
        if (TN4 > 1u) { b1 = quad_b(bi + WY); }
        mma_step(acc, a0, a1, b0, b1);
        ai += SA4;
        bi += SB4;
    }
}

// The K loop over the depth tiles [kt0, kt1) (slices of depth BK); returns this invocation's
// accumulators.
fn gemm_mainloop(kt0: u32, kt1: u32, tx: u32, ty: u32) -> Acc {
    var acc: Acc;
    var regs: Regs;
    if (kt0 < kt1) {
        fetch_tiles(&regs, kt0 * BK);
        stage_tiles(&regs, 0u);
        workgroupBarrier();
        for (var kt = kt0; kt < kt1; kt++) {
            let cur = (kt - kt0) & 1u;
            let more = kt + 1u < kt1;
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
    return acc;
}

// Split-K: store rows row..row+3 of column col (tile-relative) of the raw partial tile.
fn write_partial(row: u32, col: u32, v: vec4<acc_t>) {
    let c = g_col0 + col;
    if (c >= g_part_n) {
        return;
    }
    let r = g_row0 + row;
    let i = g_part + c * g_part_m + r;
    if (r < g_part_m) { C[i] = c_t(v.x); }
    if (r + 1u < g_part_m) { C[i + 1u] = c_t(v.y); }
    if (r + 2u < g_part_m) { C[i + 2u] = c_t(v.z); }
    if (r + 3u < g_part_m) { C[i + 3u] = c_t(v.w); }
}

fn emit_quad(row: u32, col: u32, v: vec4<acc_t>) {
    if (SPLIT_K) {
        write_partial(row, col, v);
    } else {
        write_quad(row, col, v);
    }
}

// Hand every accumulator quad to emit_quad (tile-relative row and column): the kernel's
// write_quad, or the partial store with split-K.
fn write_acc(acc: ptr<function, Acc>, tx: u32, ty: u32) {
    let r0 = tx * 4u;
    let r1 = (tx + WX) * 4u;
    let s0 = ty * 4u;
    let s1 = (ty + WY) * 4u;
    emit_quad(r0, s0, (*acc).c00);
    emit_quad(r0, s0 + 1u, (*acc).c10);
    emit_quad(r0, s0 + 2u, (*acc).c20);
    emit_quad(r0, s0 + 3u, (*acc).c30);
    if (TM4 > 1u) {
        emit_quad(r1, s0, (*acc).c01);
        emit_quad(r1, s0 + 1u, (*acc).c11);
        emit_quad(r1, s0 + 2u, (*acc).c21);
        emit_quad(r1, s0 + 3u, (*acc).c31);
    }
    if (TN4 > 1u) {
        emit_quad(r0, s1, (*acc).c40);
        emit_quad(r0, s1 + 1u, (*acc).c50);
        emit_quad(r0, s1 + 2u, (*acc).c60);
        emit_quad(r0, s1 + 3u, (*acc).c70);
        if (TM4 > 1u) {
            emit_quad(r1, s1, (*acc).c41);
            emit_quad(r1, s1 + 1u, (*acc).c51);
            emit_quad(r1, s1 + 2u, (*acc).c61);
            emit_quad(r1, s1 + 3u, (*acc).c71);
        }
    }
}
