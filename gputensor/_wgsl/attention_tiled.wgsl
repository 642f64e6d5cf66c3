{{ENABLE}}
// Flash-attention forward, tiled (ops_attention.py): one workgroup per (batch*head, block of BQ
// query rows, split of the key/value sequence). Never materialises the score matrix. The
// general prefill kernel: every dtype, float64 included, and the "tiled" variant
// (GPUTENSOR_ATTENTION_KERNEL=tiled); attention_flash.wgsl, with larger register tiles and vec4
// reads of V, is the default for float16/float32.
//
// Per K/V tile of BK = 64 keys:
//   S-phase: S[BQ][BK] = Q_blk K_tile^T; invocation (ty, tx) owns rows 4ty..4ty+3 x keys
//            4tx..4tx+3 (four vec4 registers, one per row); Q and K are staged transposed in
//            workgroup memory in chunks of DC head-dim columns (rows padded against bank
//            conflicts).
//   softmax: scores scaled by scale*log2(e); running row max m (the 16 invocations of a row
//            exchange partial maxima through workgroup memory), per-invocation partial row
//            sums l, rescale factor exp2(m_old - m_new).
//   PV-phase: P (transposed, padded) in workgroup memory; V staged in chunks of KC keys;
//            invocation (ty, tx) accumulates O rows 4ty..4ty+3 x columns tx + 16c, c < DP/16,
//            in acc<c> (a vec4 over the 4 rows).
// Register state is kept in named vectors, never in arrays indexed in loops: naga bounds every
// SPIR-V loop with a counter, drivers then do not unroll them, and a loop-indexed array lives
// in (slow) local memory. Hence the unrolled acc0..acc15 statements guarded by `NPV > c`
// (constant conditions the compiler removes).
// SPLIT == false: writes o = acc / l (0 for a row whose keys are all masked).
// SPLIT == true:  writes the partial record (m, l, acc[0..head_dim)) of its split to the scratch
//                 buffer bound as `o`; attention_combine.wgsl merges the splits.
//
// Placeholders: ENABLE, STORAGE (f16/f32/f64), COMPUTE (f32/f64), OUT (STORAGE or COMPUTE),
// BQ (rows per block), DP (padded head dim, multiple of 16, at most 256), KC (V keys per chunk),
// STAGE4 (vec4 slots of the staging area), SPLIT, NEG (most negative finite COMPUTE value),
// EXP2 (exp2 or exp2_poly: GLSL.std.450 has no f64 exp2).
//#include common
//#include attention_common
//#include attention_params

alias S = {{STORAGE}};
alias T = {{COMPUTE}};
alias out_t = {{OUT}};  // the element type of o: STORAGE, or COMPUTE for split records

const BQ: u32 = {{BQ}}u;
const BK: u32 = 64u;
const DP: u32 = {{DP}}u;
const DC: u32 = 16u;
const KC: u32 = {{KC}}u;
const NTX: u32 = BK / 4u;           // 16 invocations across keys / output columns
const NTY: u32 = BQ / 4u;           // invocations across query rows
const WG: u32 = NTX * NTY;
const NPV: u32 = DP / NTX;          // output columns per invocation (1..16)
const QS: u32 = BQ + 4u;            // row stride of the transposed Q chunk (scalars)
const KS: u32 = BK + 4u;            // row stride of the transposed K chunk
const KOFF4: u32 = DC * QS / 4u;    // vec4 offset of the K chunk in the staging area
const PTS: u32 = BQ / 4u + 1u;      // vec4 stride of one key's row in pt (padded)
const STAGE4: u32 = {{STAGE4}}u;
const K_PER: u32 = BK * DC / WG;     // K elements staged per invocation and chunk (4 or 8)
const V_PER: u32 = (KC * DP + WG - 1u) / WG;  // V elements (at most 8: ops_attention picks KC so)
const SPLIT: bool = {{SPLIT}};
const NEG: T = {{NEG}};

@group(0) @binding(1) var<storage, read> q: array<S>;
@group(0) @binding(2) var<storage, read> k: array<S>;
@group(0) @binding(3) var<storage, read> v: array<S>;
@group(0) @binding(4) var<storage, read_write> o: array<out_t>;

// Staging area, reused in turn for: Q^T|K^T chunks, row-max partials, V chunks, row-sum partials.
var<workgroup> stage: array<vec4<T>, STAGE4>;
// Probabilities, transposed: pt[key * PTS + ty] holds rows 4ty..4ty+3 of that key.
var<workgroup> pt: array<vec4<T>, BK * PTS>;

// ---- global loads (an index out of range reads element `first` and yields 0, so that the
// loads of a batch are unconditional and issue back to back) ----
fn load_q(e: u32, d0: u32, row0: u32, base: u32) -> T {
    let row = row0 + e / DC;
    let d = d0 + e % DC;
    let ok = row < params.seq_q && d < params.head_dim;
    return select(T(0), T(q[select(params.q_first, base + row * params.head_dim + d, ok)]), ok);
}

fn load_k(e: u32, d0: u32, kv0: u32, kv_hi: u32, base: u32) -> T {
    let j = kv0 + e / DC;
    let d = d0 + e % DC;
    let ok = j < kv_hi && d < params.head_dim;
    return select(T(0), T(k[select(params.k_first, base + j * params.head_dim + d, ok)]), ok);
}

fn load_v(e: u32, j0: u32, kv_hi: u32, base: u32) -> T {
    let j = j0 + e / DP;
    let d = e % DP;
    let ok = e < KC * DP && j < kv_hi && d < params.head_dim;
    return select(T(0), T(v[select(params.v_first, base + j * params.head_dim + d, ok)]), ok);
}

// Elements e, e + WG, e + 2 WG, e + 3 WG of a chunk.
fn load_q4(e: u32, d0: u32, row0: u32, base: u32) -> vec4<T> {
    return vec4<T>(load_q(e, d0, row0, base), load_q(e + WG, d0, row0, base),
                   load_q(e + 2u * WG, d0, row0, base), load_q(e + 3u * WG, d0, row0, base));
}

fn load_k4(e: u32, d0: u32, kv0: u32, kv_hi: u32, base: u32) -> vec4<T> {
    return vec4<T>(load_k(e, d0, kv0, kv_hi, base), load_k(e + WG, d0, kv0, kv_hi, base),
                   load_k(e + 2u * WG, d0, kv0, kv_hi, base), load_k(e + 3u * WG, d0, kv0, kv_hi, base));
}

fn load_v4(e: u32, j0: u32, kv_hi: u32, base: u32) -> vec4<T> {
    return vec4<T>(load_v(e, j0, kv_hi, base), load_v(e + WG, j0, kv_hi, base),
                   load_v(e + 2u * WG, j0, kv_hi, base), load_v(e + 3u * WG, j0, kv_hi, base));
}

// ---- staging stores ----
fn stage_q(e: u32, x: T) {
    let at = (e % DC) * QS + e / DC;
    stage[at / 4u][at % 4u] = x;
}

fn stage_k(e: u32, x: T) {
    let at = (e % DC) * KS + e / DC;
    stage[KOFF4 + at / 4u][at % 4u] = x;
}

fn stage_q4(e: u32, x: vec4<T>) {
    stage_q(e, x.x);
    stage_q(e + WG, x.y);
    stage_q(e + 2u * WG, x.z);
    stage_q(e + 3u * WG, x.w);
}

fn stage_k4(e: u32, x: vec4<T>) {
    stage_k(e, x.x);
    stage_k(e + WG, x.y);
    stage_k(e + 2u * WG, x.z);
    stage_k(e + 3u * WG, x.w);
}

fn stage_v4(e: u32, x: vec4<T>) {
    // V chunk elements in natural order (key-major); e < KC * DP always holds for stored ones.
    if (e < KC * DP) { stage[e / 4u][e % 4u] = x.x; }
    if (e + WG < KC * DP) { stage[(e + WG) / 4u][e % 4u] = x.y; }
    if (e + 2u * WG < KC * DP) { stage[(e + 2u * WG) / 4u][e % 4u] = x.z; }
    if (e + 3u * WG < KC * DP) { stage[(e + 3u * WG) / 4u][e % 4u] = x.w; }
}

fn exp2v(x: vec4<T>) -> vec4<T> {
    return vec4<T>({{EXP2}}(x.x), {{EXP2}}(x.y), {{EXP2}}(x.z), {{EXP2}}(x.w));
}

// Which of keys first..first+3 a row with exclusive key limit `lim` sees.
fn key_mask(first: i32, lim: i32) -> vec4<bool> {
    return (vec4<i32>(first) + vec4<i32>(0, 1, 2, 3)) < vec4<i32>(lim);
}

fn masked_max(s: vec4<T>, mask: vec4<bool>) -> T {
    let x = select(vec4<T>(NEG), s, mask);
    return max(max(x.x, x.y), max(x.z, x.w));
}

// Stage this invocation's partials x (rows 4ty..4ty+3) as scalars row * NTX + tx.
fn stage_rows(ty: u32, tx: u32, x: vec4<T>) {
    let at = 4u * ty * NTX + tx;
    stage[at / 4u][at % 4u] = x.x;
    stage[(at + NTX) / 4u][at % 4u] = x.y;
    stage[(at + 2u * NTX) / 4u][at % 4u] = x.z;
    stage[(at + 3u * NTX) / 4u][at % 4u] = x.w;
}

// Max / sum of the NTX partials of `row` (staged by stage_rows).
fn row_max(row: u32) -> T {
    let at = row * (NTX / 4u);
    let x = max(max(stage[at], stage[at + 1u]), max(stage[at + 2u], stage[at + 3u]));
    return max(max(x.x, x.y), max(x.z, x.w));
}

fn row_sum(row: u32) -> T {
    let at = row * (NTX / 4u);
    let x = (stage[at] + stage[at + 1u]) + (stage[at + 2u] + stage[at + 3u]);
    return (x.x + x.y) + (x.z + x.w);
}

// Store this invocation's values of output column `col` for rows row_first..row_first+3.
fn store_col(col: u32, a: vec4<T>, row_first: u32, bh: u32, split: u32, inv: vec4<T>) {
    let hd = params.head_dim;
    if (col >= hd) {
        return;
    }
    for (var i = 0u; i < 4u; i++) {
        let row = row_first + i;
        if (row >= params.seq_q) {
            break;
        }
        if (SPLIT) {
            let rec = params.o_first + ((bh * params.seq_q + row) * params.splits + split) * (hd + 2u);
            o[rec + 2u + col] = out_t(a[i]);
        } else {
            o[params.o_first + (bh * params.seq_q + row) * hd + col] = out_t(a[i] * inv[i]);
        }
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let g = linear_group(wid, nwg);
    if (g >= params.n_bh * params.splits * params.q_blocks) {
        return;
    }
    // Query blocks vary fastest (blocks of one head share K/V in cache), last block first
    // (with a causal mask it has the most keys).
    let qb = params.q_blocks - 1u - g % params.q_blocks;
    let rest = g / params.q_blocks;
    let split = rest % params.splits;
    let bh = rest / params.splits;

    let tx = tid % NTX;
    let ty = tid / NTX;
    let lane = tx % 4u;
    let hd = params.head_dim;
    let seq_q = params.seq_q;
    let row0 = qb * BQ;
    let row_first = row0 + 4u * ty;
    let q_base = params.q_first + bh * seq_q * hd;
    let k_base = params.k_first + bh * params.seq_kv * hd;
    let v_base = params.v_first + bh * params.seq_kv * hd;
    let scale = T(params.scale_hi) + T(params.scale_lo);
    let causal = params.causal != 0u;

    let kv_lo = split * params.split_len;
    let kv_end = min(params.seq_kv, kv_lo + params.split_len);
    var kv_hi = kv_end;
    // Exclusive key limit of each of this invocation's rows.
    var row_lim = vec4<i32>(i32(kv_end));
    if (causal) {
        // Key j is visible to row i when j <= i + seq_kv - seq_q.
        let last_row = i32(min(row0 + BQ, seq_q)) - 1;
        kv_hi = u32(clamp(last_row + params.causal_shift + 1, i32(kv_lo), i32(kv_end)));
        let own = vec4<i32>(i32(row_first)) + vec4<i32>(0, 1, 2, 3) + vec4<i32>(params.causal_shift + 1);
        row_lim = min(row_lim, own);
    }

    var m = vec4<T>(NEG);
    var l = vec4<T>(T(0));
    var acc0 = vec4<T>(T(0));
    var acc1 = vec4<T>(T(0));
    var acc2 = vec4<T>(T(0));
    var acc3 = vec4<T>(T(0));
    var acc4 = vec4<T>(T(0));
    var acc5 = vec4<T>(T(0));
    var acc6 = vec4<T>(T(0));
    var acc7 = vec4<T>(T(0));
    var acc8 = vec4<T>(T(0));
    var acc9 = vec4<T>(T(0));
    var acc10 = vec4<T>(T(0));
    var acc11 = vec4<T>(T(0));
    var acc12 = vec4<T>(T(0));
    var acc13 = vec4<T>(T(0));
    var acc14 = vec4<T>(T(0));
    var acc15 = vec4<T>(T(0));

    for (var kv0 = kv_lo; kv0 < kv_hi; kv0 += BK) {
        // ---- S = Q K^T over head-dim chunks ----
        var s0 = vec4<T>(T(0));
        var s1 = vec4<T>(T(0));
        var s2 = vec4<T>(T(0));
        var s3 = vec4<T>(T(0));
        for (var d0 = 0u; d0 < DP; d0 += DC) {
            // All global loads of the chunk first (one memory latency), then the stores.
            let qa = load_q4(tid, d0, row0, q_base);
            let ka = load_k4(tid, d0, kv0, kv_hi, k_base);
            var kb = vec4<T>(T(0));
            if (K_PER > 4u) {
                kb = load_k4(tid + 4u * WG, d0, kv0, kv_hi, k_base);
            }
            workgroupBarrier();
            stage_q4(tid, qa);
            stage_k4(tid, ka);
            if (K_PER > 4u) {
                stage_k4(tid + 4u * WG, kb);
            }
            workgroupBarrier();
            for (var dd = 0u; dd < DC; dd += 4u) {
                let a0 = stage[dd * (QS / 4u) + ty];
                let b0 = stage[KOFF4 + dd * (KS / 4u) + tx];
                let a1 = stage[(dd + 1u) * (QS / 4u) + ty];
                let b1 = stage[KOFF4 + (dd + 1u) * (KS / 4u) + tx];
                let a2 = stage[(dd + 2u) * (QS / 4u) + ty];
                let b2 = stage[KOFF4 + (dd + 2u) * (KS / 4u) + tx];
                let a3 = stage[(dd + 3u) * (QS / 4u) + ty];
                let b3 = stage[KOFF4 + (dd + 3u) * (KS / 4u) + tx];
                s0 += a0.x * b0 + a1.x * b1 + a2.x * b2 + a3.x * b3;
                s1 += a0.y * b0 + a1.y * b1 + a2.y * b2 + a3.y * b3;
                s2 += a0.z * b0 + a1.z * b1 + a2.z * b2 + a3.z * b3;
                s3 += a0.w * b0 + a1.w * b1 + a2.w * b2 + a3.w * b3;
            }
        }

        // ---- online softmax ----
        let first_key = i32(kv0 + 4u * tx);
        let mk0 = key_mask(first_key, row_lim.x);
        let mk1 = key_mask(first_key, row_lim.y);
        let mk2 = key_mask(first_key, row_lim.z);
        let mk3 = key_mask(first_key, row_lim.w);
        s0 *= scale;
        s1 *= scale;
        s2 *= scale;
        s3 *= scale;
        let pmax = vec4<T>(masked_max(s0, mk0), masked_max(s1, mk1), masked_max(s2, mk2), masked_max(s3, mk3));
        workgroupBarrier();
        stage_rows(ty, tx, pmax);
        workgroupBarrier();
        let r4 = 4u * ty;
        let mx = max(m, vec4<T>(row_max(r4), row_max(r4 + 1u), row_max(r4 + 2u), row_max(r4 + 3u)));
        let alpha = exp2v(m - mx);
        m = mx;
        let p0 = select(vec4<T>(T(0)), exp2v(s0 - vec4<T>(mx.x)), mk0);
        let p1 = select(vec4<T>(T(0)), exp2v(s1 - vec4<T>(mx.y)), mk1);
        let p2 = select(vec4<T>(T(0)), exp2v(s2 - vec4<T>(mx.z)), mk2);
        let p3 = select(vec4<T>(T(0)), exp2v(s3 - vec4<T>(mx.w)), mk3);
        let one = vec4<T>(T(1));
        l = l * alpha + vec4<T>(dot(p0, one), dot(p1, one), dot(p2, one), dot(p3, one));
        acc0 *= alpha;
        if (NPV > 1u) { acc1 *= alpha; }
        if (NPV > 2u) { acc2 *= alpha; }
        if (NPV > 3u) { acc3 *= alpha; }
        if (NPV > 4u) { acc4 *= alpha; }
        if (NPV > 5u) { acc5 *= alpha; }
        if (NPV > 6u) { acc6 *= alpha; }
        if (NPV > 7u) { acc7 *= alpha; }
        if (NPV > 8u) { acc8 *= alpha; }
        if (NPV > 9u) { acc9 *= alpha; }
        if (NPV > 10u) { acc10 *= alpha; }
        if (NPV > 11u) { acc11 *= alpha; }
        if (NPV > 12u) { acc12 *= alpha; }
        if (NPV > 13u) { acc13 *= alpha; }
        if (NPV > 14u) { acc14 *= alpha; }
        if (NPV > 15u) { acc15 *= alpha; }
        pt[(4u * tx) * PTS + ty] = vec4<T>(p0.x, p1.x, p2.x, p3.x);
        pt[(4u * tx + 1u) * PTS + ty] = vec4<T>(p0.y, p1.y, p2.y, p3.y);
        pt[(4u * tx + 2u) * PTS + ty] = vec4<T>(p0.z, p1.z, p2.z, p3.z);
        pt[(4u * tx + 3u) * PTS + ty] = vec4<T>(p0.w, p1.w, p2.w, p3.w);
        workgroupBarrier();

        // ---- O += P V, V staged KC keys at a time ----
        let tile_keys = min(BK, kv_hi - kv0);
        for (var k0 = 0u; k0 < tile_keys; k0 += KC) {
            let j0 = kv0 + k0;
            let va = load_v4(tid, j0, kv_hi, v_base);
            var vb = vec4<T>(T(0));
            if (V_PER > 4u) {
                vb = load_v4(tid + 4u * WG, j0, kv_hi, v_base);
            }
            if (k0 > 0u) {
                workgroupBarrier();
            }
            stage_v4(tid, va);
            if (V_PER > 4u) {
                stage_v4(tid + 4u * WG, vb);
            }
            workgroupBarrier();
            for (var kk = 0u; kk < KC; kk++) {
                let pv = pt[(k0 + kk) * PTS + ty];
                let vrow = kk * (DP / 4u) + tx / 4u;
                acc0 += pv * stage[vrow + 0u][lane];
                if (NPV > 1u) { acc1 += pv * stage[vrow + 4u][lane]; }
                if (NPV > 2u) { acc2 += pv * stage[vrow + 8u][lane]; }
                if (NPV > 3u) { acc3 += pv * stage[vrow + 12u][lane]; }
                if (NPV > 4u) { acc4 += pv * stage[vrow + 16u][lane]; }
                if (NPV > 5u) { acc5 += pv * stage[vrow + 20u][lane]; }
                if (NPV > 6u) { acc6 += pv * stage[vrow + 24u][lane]; }
                if (NPV > 7u) { acc7 += pv * stage[vrow + 28u][lane]; }
                if (NPV > 8u) { acc8 += pv * stage[vrow + 32u][lane]; }
                if (NPV > 9u) { acc9 += pv * stage[vrow + 36u][lane]; }
                if (NPV > 10u) { acc10 += pv * stage[vrow + 40u][lane]; }
                if (NPV > 11u) { acc11 += pv * stage[vrow + 44u][lane]; }
                if (NPV > 12u) { acc12 += pv * stage[vrow + 48u][lane]; }
                if (NPV > 13u) { acc13 += pv * stage[vrow + 52u][lane]; }
                if (NPV > 14u) { acc14 += pv * stage[vrow + 56u][lane]; }
                if (NPV > 15u) { acc15 += pv * stage[vrow + 60u][lane]; }
            }
        }
    }

    // ---- row sums across the NTX invocations of a row ----
    workgroupBarrier();
    stage_rows(ty, tx, l);
    workgroupBarrier();
    let r4 = 4u * ty;
    let lsum = vec4<T>(row_sum(r4), row_sum(r4 + 1u), row_sum(r4 + 2u), row_sum(r4 + 3u));
    let inv = select(vec4<T>(T(0)), vec4<T>(T(1)) / select(vec4<T>(T(1)), lsum, lsum > vec4<T>(T(0))),
                     lsum > vec4<T>(T(0)));

    if (SPLIT && tx == 0u) {
        for (var i = 0u; i < 4u; i++) {
            let row = row_first + i;
            if (row < seq_q) {
                let rec = params.o_first + ((bh * seq_q + row) * params.splits + split) * (hd + 2u);
                o[rec] = out_t(m[i]);
                o[rec + 1u] = out_t(lsum[i]);
            }
        }
    }
    store_col(tx + 0u, acc0, row_first, bh, split, inv);
    if (NPV > 1u) { store_col(tx + 16u, acc1, row_first, bh, split, inv); }
    if (NPV > 2u) { store_col(tx + 32u, acc2, row_first, bh, split, inv); }
    if (NPV > 3u) { store_col(tx + 48u, acc3, row_first, bh, split, inv); }
    if (NPV > 4u) { store_col(tx + 64u, acc4, row_first, bh, split, inv); }
    if (NPV > 5u) { store_col(tx + 80u, acc5, row_first, bh, split, inv); }
    if (NPV > 6u) { store_col(tx + 96u, acc6, row_first, bh, split, inv); }
    if (NPV > 7u) { store_col(tx + 112u, acc7, row_first, bh, split, inv); }
    if (NPV > 8u) { store_col(tx + 128u, acc8, row_first, bh, split, inv); }
    if (NPV > 9u) { store_col(tx + 144u, acc9, row_first, bh, split, inv); }
    if (NPV > 10u) { store_col(tx + 160u, acc10, row_first, bh, split, inv); }
    if (NPV > 11u) { store_col(tx + 176u, acc11, row_first, bh, split, inv); }
    if (NPV > 12u) { store_col(tx + 192u, acc12, row_first, bh, split, inv); }
    if (NPV > 13u) { store_col(tx + 208u, acc13, row_first, bh, split, inv); }
    if (NPV > 14u) { store_col(tx + 224u, acc14, row_first, bh, split, inv); }
    if (NPV > 15u) { store_col(tx + 240u, acc15, row_first, bh, split, inv); }
}
