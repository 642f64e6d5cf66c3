// 8-bit integer matrix product on subgroup matrices (tensor cores), for ops_matmul_int.py:
//
//     C[q, i, j] = sum_p A[q, i, p] * B[q, p, j]      (i < m, j < n, p < k, q = workgroup_id.z)
//
// A and B are int8 (or both uint8), packed 4 to a u32 word in NumPy's byte order, with any
// element strides; C is acc_t = {{ACC}} (i32 for int8, u32 for uint8), the subgroup-matrix
// configuration's result type, so every product is exact and the sums wrap modulo 2^32 as the
// generic kernel's (matmul_int.wgsl: same Params, bindings and grid). Needs the Dawn feature
// chromium-experimental-subgroup-matrix with an SM_M x SM_N x SM_K configuration of the
// 8-bit component type (i8 / u8) and result type acc_t.
//
// Tiling: one workgroup computes a BM x BN tile of C with NSG subgroups in a WGM x WGN grid; a
// subgroup owns TM x TN result matrices of SM_M x SM_N (named accumulators c<r><s>, r < 2,
// s < 4). Per BK-deep step, the workgroup stages the A tile and the B tile into workgroup memory
// as packed bytes (words of 4 consecutive elements along the staged rows; edges past m, n and k
// are zero, so the products over the padding add nothing), then every computing subgroup loads its
// left and right matrices from there and multiply-accumulates BK / SM_K times. With STAGES == 2
// the next step is fetched into registers meanwhile and the tiles are double-buffered. A is staged
// m-major (rows of k, loaded row_major) or, when its m stride is the unit one, k-major (rows of
// m, loaded col_major); B likewise (A_COLMAJ / B_COLMAJ). Staged rows are padded by 4 words.
// A staged word is one u32 load where the four elements are one aligned word of the source
// (unit stride along the staged row, aligned start and row stride: checked per workgroup),
// else four byte loads.
//
// Results: a workgroup whose tile lies inside C, when C's column stride is 1 (C_DIRECT) and it
// does not accumulate, stores its matrices straight into C; any other workgroup passes each
// matrix through workgroup memory (As, no longer needed by then) and writes the elements inside
// C one by one.
//
// Subgroup-matrix calls run in subgroup-uniform control flow: every branch around them depends
// only on parameters, workgroup ids and subgroup_id. Subgroups past the NSG of the grid (where
// the device runs smaller subgroups than its maximum) stage tiles but compute nothing.
enable chromium_experimental_subgroup_matrix;
enable subgroups;
diagnostic(off, chromium.subgroup_matrix_uniformity);

//#include common

//#include matmul_int_params

const SM_M: u32 = {{SM_M}}u;
const SM_N: u32 = {{SM_N}}u;
const SM_K: u32 = {{SM_K}}u;
alias LeftT = subgroup_matrix_left<{{ELEM}}, {{SM_K}}, {{SM_M}}>;
alias RightT = subgroup_matrix_right<{{ELEM}}, {{SM_N}}, {{SM_K}}>;
alias ResT = subgroup_matrix_result<acc_t, {{SM_N}}, {{SM_M}}>;

const WGM: u32 = {{WGM}}u;            // subgroups along m
const WGN: u32 = {{WGN}}u;            // subgroups along n
const NSG: u32 = WGM * WGN;
const TM: u32 = {{TM}}u;              // result matrices per subgroup along m (1 or 2)
const TN: u32 = {{TN}}u;              // along n (1 to 4)
const NT: u32 = {{NT}}u;              // invocations per workgroup: NSG * the maximum subgroup size
const BM: u32 = WGM * TM * SM_M;
const BN: u32 = WGN * TN * SM_N;
const BK: u32 = {{BK}}u;              // a multiple of SM_K and of 4
const KSTEPS: u32 = BK / SM_K;
const A_COLMAJ: bool = {{A_COLMAJ}};
const B_COLMAJ: bool = {{B_COLMAJ}};
const C_DIRECT: bool = {{C_DIRECT}};
const GROUP_M: u32 = 8u;              // tile swizzle: 8 tile-rows share B tiles in cache

// Staged tiles: A_ROWS rows of A_COLS bytes, SA words apart, STAGES buffers of A_BUF words
// (likewise B); LA / LB staged words per invocation. With STAGES == 2 the next step's words are
// fetched into registers before the current step's products and stored into the other buffer
// after them (one barrier per step); with 1, fetch, barrier, products, barrier. The result
// spill reuses As (acc_t is the staged words' type), AS_WORDS >= the NSG spill matrices.
const A_ROWS: u32 = {{A_ROWS}}u;
const A_COLS: u32 = {{A_COLS}}u;
const SA: u32 = A_COLS / 4u + 4u;
const B_ROWS: u32 = {{B_ROWS}}u;
const B_COLS: u32 = {{B_COLS}}u;
const SB: u32 = B_COLS / 4u + 4u;
const A_WORDS: u32 = A_ROWS * A_COLS / 4u;
const B_WORDS: u32 = B_ROWS * B_COLS / 4u;
const A_BUF: u32 = A_ROWS * SA;
const B_BUF: u32 = B_ROWS * SB;
const STAGES: u32 = {{STAGES}}u;
const LA: u32 = {{LA}}u;
const LB: u32 = {{LB}}u;

var<workgroup> As: array<{{STAGE}}, {{AS_WORDS}}>;
var<workgroup> Bs: array<{{STAGE}}, STAGES * B_BUF>;

// The workgroup's tile: C rows row0.., columns col0..; the element [0, 0, 0] of its batch in
// A, B and C. Values that the control flow of barriers and subgroup-matrix calls depends on are
// passed as arguments (private variables count as non-uniform).
struct Tile {
    row0: u32,
    col0: u32,
    abase: u32,
    bbase: u32,
    cbase: u32,
}

// Where one staged tile comes from: staged (r, c) is source element base + r * sr + c * sc,
// present for r < rlim and c < clim; `words`: a staged word is one aligned source word.
struct Src {
    base: u32,
    sr: u32,
    sc: u32,
    rlim: u32,
    clim: u32,
    words: bool,
}

// Staged words fetched for the next step (STAGES == 2).
struct Regs {
    a: array<u32, LA>,
    b: array<u32, LB>,
}

//#include tile_swizzle

fn a_byte(e: u32) -> u32 {
    return (A[e >> 2u] >> ((e & 3u) * 8u)) & 0xFFu;
}

fn b_byte(e: u32) -> u32 {
    return (B[e >> 2u] >> ((e & 3u) * 8u)) & 0xFFu;
}

// The A tile of depth k0 .. k0 + BK: staged (r, c) is A's (row0 + r, k0 + c), or with A_COLMAJ
// its (row0 + c, k0 + r).
fn a_src(t: Tile, k0: u32) -> Src {
    var s = Src(t.abase + t.row0 * params.a_rs + k0 * params.a_cs, params.a_rs, params.a_cs,
                params.m - t.row0, params.k - k0, false);
    if (A_COLMAJ) {
        s.sr = params.a_cs;
        s.sc = params.a_rs;
        s.rlim = params.k - k0;
        s.clim = params.m - t.row0;
    }
    s.words = s.sc == 1u && (s.base & 3u) == 0u && (s.sr & 3u) == 0u;
    return s;
}

// The B tile of depth k0 .. k0 + BK: staged (r, c) is B's (k0 + r, col0 + c), or with B_COLMAJ
// its (k0 + c, col0 + r).
fn b_src(t: Tile, k0: u32) -> Src {
    var s = Src(t.bbase + k0 * params.b_rs + t.col0 * params.b_cs, params.b_rs, params.b_cs,
                params.k - k0, params.n - t.col0, false);
    if (B_COLMAJ) {
        s.sr = params.b_cs;
        s.sc = params.b_rs;
        s.rlim = params.n - t.col0;
        s.clim = params.k - k0;
    }
    s.words = s.sc == 1u && (s.base & 3u) == 0u && (s.sr & 3u) == 0u;
    return s;
}

// Staged word w (4 elements along a staged row; 0 past the edges) of A's tile `s`.
fn a_word(s: Src, w: u32) -> u32 {
    let r = w / (A_COLS / 4u);
    let c = (w % (A_COLS / 4u)) * 4u;
    var v = 0u;
    if (w < A_WORDS && r < s.rlim && c < s.clim) {
        let src = s.base + r * s.sr + c * s.sc;
        if (s.words && c + 4u <= s.clim) {
            v = A[src >> 2u];
        } else {
            v = a_byte(src);
            if (c + 1u < s.clim) { v |= a_byte(src + s.sc) << 8u; }
            if (c + 2u < s.clim) { v |= a_byte(src + 2u * s.sc) << 16u; }
            if (c + 3u < s.clim) { v |= a_byte(src + 3u * s.sc) << 24u; }
        }
    }
    return v;
}

fn b_word(s: Src, w: u32) -> u32 {
    let r = w / (B_COLS / 4u);
    let c = (w % (B_COLS / 4u)) * 4u;
    var v = 0u;
    if (w < B_WORDS && r < s.rlim && c < s.clim) {
        let src = s.base + r * s.sr + c * s.sc;
        if (s.words && c + 4u <= s.clim) {
            v = B[src >> 2u];
        } else {
            v = b_byte(src);
            if (c + 1u < s.clim) { v |= b_byte(src + s.sc) << 8u; }
            if (c + 2u < s.clim) { v |= b_byte(src + 2u * s.sc) << 16u; }
            if (c + 3u < s.clim) { v |= b_byte(src + 3u * s.sc) << 24u; }
        }
    }
    return v;
}

fn put_a(buf: u32, w: u32, v: u32) {
    if (w < A_WORDS) {
        As[buf * A_BUF + (w / (A_COLS / 4u)) * SA + w % (A_COLS / 4u)] = bitcast<{{STAGE}}>(v);
    }
}

fn put_b(buf: u32, w: u32, v: u32) {
    if (w < B_WORDS) {
        Bs[buf * B_BUF + (w / (B_COLS / 4u)) * SB + w % (B_COLS / 4u)] = bitcast<{{STAGE}}>(v);
    }
}

// Stage the tiles of depth k0 into buffer `buf` straight from memory.
fn stage(t: Tile, k0: u32, buf: u32, tid: u32) {
    let sa = a_src(t, k0);
    let sb = b_src(t, k0);
    for (var w = tid; w < A_WORDS; w += NT) {
        put_a(buf, w, a_word(sa, w));
    }
    for (var w = tid; w < B_WORDS; w += NT) {
        put_b(buf, w, b_word(sb, w));
    }
}

// Fetch the staged words of depth k0 into registers.
fn fetch(r: ptr<function, Regs>, t: Tile, k0: u32, tid: u32) {
    let sa = a_src(t, k0);
    let sb = b_src(t, k0);
    //#unroll
    for (var e = 0u; e < LA; e++) {
        (*r).a[e] = a_word(sa, tid + e * NT);
    }
    //#unroll
    for (var e = 0u; e < LB; e++) {
        (*r).b[e] = b_word(sb, tid + e * NT);
    }
}

// Store the fetched words into buffer `buf`.
fn put(r: ptr<function, Regs>, buf: u32, tid: u32) {
    //#unroll
    for (var e = 0u; e < LA; e++) {
        put_a(buf, tid + e * NT, (*r).a[e]);
    }
    //#unroll
    for (var e = 0u; e < LB; e++) {
        put_b(buf, tid + e * NT, (*r).b[e]);
    }
}

// Word offset in As of the left matrix at tile rows i0.., depth kk.. (kk a multiple of SM_K).
fn a_offset(buf: u32, i0: u32, kk: u32) -> u32 {
    if (A_COLMAJ) {
        return buf * A_BUF + kk * SA + i0 / 4u;
    }
    return buf * A_BUF + i0 * SA + kk / 4u;
}

// Word offset in Bs of the right matrix at depth kk.., tile columns j0...
fn b_offset(buf: u32, kk: u32, j0: u32) -> u32 {
    if (B_COLMAJ) {
        return buf * B_BUF + j0 * SB + kk / 4u;
    }
    return buf * B_BUF + kk * SB + j0 / 4u;
}

fn load_left(buf: u32, i0: u32, kk: u32) -> LeftT {
    return subgroupMatrixLoad<LeftT, {{A_MAJOR}}>(&As, a_offset(buf, i0, kk), SA);
}

fn load_right(buf: u32, kk: u32, j0: u32) -> RightT {
    return subgroupMatrixLoad<RightT, {{B_MAJOR}}>(&Bs, b_offset(buf, kk, j0), SB);
}

// C <- v (or C += v) for the result matrix at tile rows i0.., columns j0.. through As: called by
// every invocation of the workgroup (it holds barriers); computing subgroups write their matrix.
fn spill(t: Tile, v: ResT, i0: u32, j0: u32, computes: bool, sg: u32, lane: u32, sg_size: u32) {
    let base = sg * (SM_M * SM_N);
    if (computes) {
        subgroupMatrixStore<row_major>(&As, base, v, SM_N);
    }
    workgroupBarrier();
    if (computes) {
        for (var e = lane; e < SM_M * SM_N; e += sg_size) {
            let r = t.row0 + i0 + e / SM_N;
            let c = t.col0 + j0 + e % SM_N;
            if (r < params.m && c < params.n) {
                let idx = t.cbase + r * params.c_rs + c * params.c_cs;
                var x = As[base + e];
                if (params.accumulate != 0u) {
                    x = x + C[idx];
                }
                C[idx] = x;
            }
        }
    }
    workgroupBarrier();
}

fn store_direct(t: Tile, v: ResT, i0: u32, j0: u32) {
    let off = t.cbase + (t.row0 + i0) * params.c_rs + t.col0 + j0;
    subgroupMatrixStore<row_major>(&C, off, v, params.c_rs);
}

@compute @workgroup_size(NT)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
    @builtin(subgroup_id) sgid: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let lin = linear_group(wid, nwg);
    if (lin >= params.tiles_m * params.tiles_n) {
        return;
    }
    let tile = swizzle_tile(lin, params.tiles_m, params.tiles_n);
    let t = Tile(tile.x * BM, tile.y * BN, params.a_first + wid.z * params.a_bs,
                 params.b_first + wid.z * params.b_bs, params.c_first + wid.z * params.c_bs);
    let computes = sgid < NSG;
    let sg = min(sgid, NSG - 1u);
    let i0 = (sg / WGN) * (TM * SM_M);   // this subgroup's first tile row
    let j0 = (sg % WGN) * (TN * SM_N);   // and column

    var c00 = ResT();
    var c01 = ResT();
    var c02 = ResT();
    var c03 = ResT();
    var c10 = ResT();
    var c11 = ResT();
    var c12 = ResT();
    var c13 = ResT();

    let ktiles = (params.k + BK - 1u) / BK;
    var regs: Regs;
    if (STAGES == 2u) {
        stage(t, 0u, 0u, tid);
        workgroupBarrier();
    }
    for (var kt = 0u; kt < ktiles; kt++) {
        let cur = (kt & 1u) * (STAGES - 1u);
        let more = kt + 1u < ktiles;
        if (STAGES == 1u) {
            stage(t, kt * BK, 0u, tid);
            workgroupBarrier();
        } else if (more) {
            fetch(&regs, t, (kt + 1u) * BK, tid);
        }
        if (computes) {
            for (var ks = 0u; ks < KSTEPS; ks++) {
                let kk = ks * SM_K;
                let a0 = load_left(cur, i0, kk);
                let b0 = load_right(cur, kk, j0);
                c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
                if (TN > 1u) {
                    let b1 = load_right(cur, kk, j0 + SM_N);
                    c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
                    if (TM > 1u) {
                        let a1 = load_left(cur, i0 + SM_M, kk);
                        c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
                        c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
                        if (TN > 2u) {
                            let b2 = load_right(cur, kk, j0 + 2u * SM_N);
                            let b3 = load_right(cur, kk, j0 + 3u * SM_N);
                            c02 = subgroupMatrixMultiplyAccumulate(a0, b2, c02);
                            c03 = subgroupMatrixMultiplyAccumulate(a0, b3, c03);
                            c12 = subgroupMatrixMultiplyAccumulate(a1, b2, c12);
                            c13 = subgroupMatrixMultiplyAccumulate(a1, b3, c13);
                        }
                    } else if (TN > 2u) {
                        let b2 = load_right(cur, kk, j0 + 2u * SM_N);
                        let b3 = load_right(cur, kk, j0 + 3u * SM_N);
                        c02 = subgroupMatrixMultiplyAccumulate(a0, b2, c02);
                        c03 = subgroupMatrixMultiplyAccumulate(a0, b3, c03);
                    }
                } else if (TM > 1u) {
                    let a1 = load_left(cur, i0 + SM_M, kk);
                    c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
                }
            }
        }
        if (STAGES == 2u && more) {
            put(&regs, cur ^ 1u, tid);
        }
        workgroupBarrier();
    }

    let inside = t.row0 + BM <= params.m && t.col0 + BN <= params.n;
    if (C_DIRECT && inside && params.accumulate == 0u) {
        if (computes) {
            store_direct(t, c00, i0, j0);
            if (TN > 1u) { store_direct(t, c01, i0, j0 + SM_N); }
            if (TN > 2u) { store_direct(t, c02, i0, j0 + 2u * SM_N); store_direct(t, c03, i0, j0 + 3u * SM_N); }
            if (TM > 1u) {
                store_direct(t, c10, i0 + SM_M, j0);
                if (TN > 1u) { store_direct(t, c11, i0 + SM_M, j0 + SM_N); }
                if (TN > 2u) {
                    store_direct(t, c12, i0 + SM_M, j0 + 2u * SM_N);
                    store_direct(t, c13, i0 + SM_M, j0 + 3u * SM_N);
                }
            }
        }
        return;
    }
    spill(t, c00, i0, j0, computes, sg, lane, sg_size);
    if (TN > 1u) { spill(t, c01, i0, j0 + SM_N, computes, sg, lane, sg_size); }
    if (TN > 2u) {
        spill(t, c02, i0, j0 + 2u * SM_N, computes, sg, lane, sg_size);
        spill(t, c03, i0, j0 + 3u * SM_N, computes, sg, lane, sg_size);
    }
    if (TM > 1u) {
        spill(t, c10, i0 + SM_M, j0, computes, sg, lane, sg_size);
        if (TN > 1u) { spill(t, c11, i0 + SM_M, j0 + SM_N, computes, sg, lane, sg_size); }
        if (TN > 2u) {
            spill(t, c12, i0 + SM_M, j0 + 2u * SM_N, computes, sg, lane, sg_size);
            spill(t, c13, i0 + SM_M, j0 + 3u * SM_N, computes, sg, lane, sg_size);
        }
    }
}
