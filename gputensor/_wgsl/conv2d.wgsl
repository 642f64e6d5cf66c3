{{ENABLE}}
// NCHW 2-D cross-correlation with zero padding as an implicit GEMM over one block of the
// problem (images n0.., output channels k0.., input channels c0.., output rows oh0..):
//   rows    m = (image, output row, output column)  -> M = nb * ohb * Ow
//   columns j = output channel                      -> N = kb
//   depth   q = (input channel, filter row, col)    -> K = cb * Fh * Fw
// The A tile (input patches) is gathered on the fly by the loader: no im2col in memory.
// B[q, j] = filter[j, q] is a column-major matrix with leading dimension C*Fh*Fw.
// With `accumulate` = 1 the result is added to the output (input-channel blocks after the first).
// With SPLIT_K the workgroups store raw partial tiles into C (a scratch buffer: see gemm_core)
// and gemm_combine.wgsl scatters (and accumulates) them into the output.
//#include common
//#include gemm_core

struct Params {
    accumulate: u32,
    m: u32,          // nb * ohb * ow
    kout: u32,       // output channels in this block
    kg: u32,         // cb * fh * fw
    in_first: u32,
    f_first: u32,
    out_first: u32,
    in_img: u32,     // C*H*W (element stride between images of the input)
    in_plane: u32,   // H*W
    h: u32,
    w: u32,
    ih_start: i32,   // input row held at the input window's row 0
    fh: u32,
    fw: u32,
    ff: u32,         // fh * fw
    sh: u32,
    sw: u32,
    ph: i32,
    pw: i32,
    ohb: u32,        // output rows in this block
    ow: u32,
    oh_base: u32,    // first output row of this block
    ldf: u32,        // C*Fh*Fw (element stride between output channels of the filter)
    out_img: u32,    // K*Oh*Ow
    out_plane: u32,  // Oh*Ow
    tiles_m: u32,
    tiles_n: u32,
    splits: u32,     // split-K: depth slices (1 without)
    kt_split: u32,   // split-K: depth tiles per slice
    // Depth steps as taps (see Tap): BK (from one fetch to the next) and A_ROWS_STEP (from one
    // element of a fetch to the next), and the offset corrections of a carry.
    step_k_off: u32,
    step_k_fr: u32,
    step_k_fc: u32,
    step_e_off: u32,
    step_e_fr: u32,
    step_e_fc: u32,
    carry_row: u32,  // w - fw (u32 bits): a filter column wraps into the next filter row
    carry_chan: u32, // in_plane - fh * w (u32 bits): a filter row wraps into the next channel
}

// A depth q = (channel c, filter row fr, filter column fc) as the window offset
// c * in_plane + fr * w + fc of its tap and its (fr, fc) for the padding checks.
struct Tap {
    off: u32,
    fr: u32,
    fc: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> X: array<{{T}}>;
@group(0) @binding(2) var<storage, read> F: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> C: array<c_t>;

// Every invocation fetches A elements of one tile row (NT is a multiple of BM): row tid % BM,
// depths tid / BM + e * A_ROWS_STEP (e < LA, so a fetch spans BK = LA * A_ROWS_STEP depths).
// The row's patch origin is decoded once, in main; the depths' taps are stepped incrementally
// (load_a), with no division in the K loop.
const A_ROWS_STEP: u32 = NT / BM;

// Per-invocation state: the patch set once by main (g_row0, g_col0, g_tid: gemm_core), the taps
// stepped by load_a.
var<private> g_patch_valid: bool;
var<private> g_patch_origin: u32; // window index of this row's tap (0, 0, 0) (u32 bits: may be "negative")
var<private> g_patch_ih: i32;     // input row of filter row 0
var<private> g_patch_iw: i32;     // input column of filter column 0
var<private> g_tap: Tap;          // tap of the element being fetched
var<private> g_next_tap: Tap;     // tap of element 0 of the next fetch

fn set_patch(m: u32) {
    g_patch_valid = m < params.m;
    let img_rows = params.ohb * params.ow;
    let n = m / img_rows;
    let rem = m - n * img_rows;
    let ohl = rem / params.ow;
    let owi = rem - ohl * params.ow;
    g_patch_ih = i32((params.oh_base + ohl) * params.sh) - params.ph;
    g_patch_iw = i32(owi * params.sw) - params.pw;
    g_patch_origin = params.in_first + n * params.in_img
        + u32(g_patch_ih - params.ih_start) * params.w + u32(g_patch_iw);
}

// The tap of depth q (divisions: once per invocation).
fn decode_tap(q: u32) -> Tap {
    let c = q / params.ff;
    let r = q - c * params.ff;
    let fr = r / params.fw;
    let fc = r - fr * params.fw;
    return Tap(c * params.in_plane + fr * params.w + fc, fr, fc);
}

// The tap of depth q + d from the tap t of q and the tap d of the step (d.fr < fh, d.fc < fw):
// add column, row and offset, then carry a column overflow into the row and a row overflow into
// the channel (each at most once).
fn tap_add(t: Tap, d: Tap) -> Tap {
    var fc = t.fc + d.fc;
    var fr = t.fr + d.fr;
    var off = t.off + d.off;
    if (fc >= params.fw) {
        fc -= params.fw;
        fr += 1u;
        off += params.carry_row;
    }
    if (fr >= params.fh) {
        fr -= params.fh;
        off += params.carry_chan;
    }
    return Tap(off, fr, fc);
}

fn a_coord(e: u32) -> vec2<u32> {
    return vec2<u32>(g_tid % BM, g_tid / BM + e * A_ROWS_STEP);
}

// B element (p, j) of fetch e: consecutive invocations read consecutive filter taps.
fn b_coord(e: u32) -> vec2<u32> {
    let idx = g_tid + e * NT;
    return vec2<u32>(idx % BK, idx / BK);
}

fn a_tile_full(k0: u32) -> bool {
    return false;  // every patch element is bounds-checked (padding)
}

fn b_tile_full(k0: u32) -> bool {
    return k0 + BK <= params.kg && g_col0 + BN <= params.kout;
}

// Element e of the fetch at depth k0. gemm_core calls it for e = 0, 1, ... of each fetch and
// fetches consecutive depth tiles, so the taps step: element 0 takes g_next_tap (then advanced
// by BK for the next fetch), element e > 0 the previous element's tap plus A_ROWS_STEP.
fn load_a(e: u32, k0: u32, full: bool) -> acc_t {
    if (e == 0u) {
        g_tap = g_next_tap;
        g_next_tap = tap_add(g_next_tap, Tap(params.step_k_off, params.step_k_fr, params.step_k_fc));
    } else {
        g_tap = tap_add(g_tap, Tap(params.step_e_off, params.step_e_fr, params.step_e_fc));
    }
    let q = k0 + g_tid / BM + e * A_ROWS_STEP;
    // input row and column of the tap; "negative" ones wrap to huge u32 values
    let ih = u32(g_patch_ih + i32(g_tap.fr));
    let iw = u32(g_patch_iw + i32(g_tap.fc));
    var v = acc_t(0);
    if (g_patch_valid && q < params.kg && ih < params.h && iw < params.w) {
        v = acc_t(X[g_patch_origin + g_tap.off]);
    }
    return v;
}

fn load_b(e: u32, k0: u32, full: bool) -> acc_t {
    let c = b_coord(e);
    var v = acc_t(0);
    if (full || (k0 + c.x < params.kg && g_col0 + c.y < params.kout)) {
        v = acc_t(F[params.f_first + k0 + c.x + (g_col0 + c.y) * params.ldf]);
    }
    return v;
}

fn store_y(row: u32, col_offset: u32, v: acc_t) {
    if (row < params.m) {
        let img_rows = params.ohb * params.ow;
        let n = row / img_rows;
        let idx = params.out_first + n * params.out_img + (row - n * img_rows) + col_offset;
        var r = v;
        if (params.accumulate != 0u) {
            r = r + acc_t(C[idx]);
        }
        C[idx] = c_t(r);
    }
}

fn write_quad(row: u32, col: u32, v: vec4<acc_t>) {
    let c = g_col0 + col;
    if (c >= params.kout) {
        return;
    }
    let co = c * params.out_plane;
    let r = g_row0 + row;
    store_y(r, co, v.x);
    store_y(r + 1u, co, v.y);
    store_y(r + 2u, co, v.z);
    store_y(r + 3u, co, v.w);
}

@compute @workgroup_size(NT)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lin = linear_group(wid, nwg);
    let work = begin_tile(lin, params.tiles_m, params.tiles_n, (params.kg + BK - 1u) / BK,
                          params.splits, params.kt_split);
    if (work.z == 0u) {
        return;
    }
    g_tid = tid;
    set_patch(g_row0 + tid % BM);
    g_next_tap = decode_tap(work.x * BK + tid / BM);
    begin_partial(0u, 1u, params.m, params.kout);
    let tx = tid % WX;
    let ty = tid / WX;
    var acc = gemm_mainloop(work.x, work.y, tx, ty);
    write_acc(&acc, tx, ty);
}
