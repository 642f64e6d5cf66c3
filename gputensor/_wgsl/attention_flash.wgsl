{{ENABLE}}
// Flash-attention forward, register-tiled (ops_attention.py, the default prefill kernel for
// float16/float32; the general attention_tiled.wgsl stays selectable). One workgroup per (batch*head, block of BQ query rows,
// split of the key/value sequence); never materialises the score matrix.
//
// NT = NX * NY invocations, NY = BQ / RM; invocation (ty, tx) = (tid / NX, tid % NX) owns the
// RM = 4 RG query rows ty + NY*r, r < RM (RG groups of 4: group h holds r = 4h..4h+3), in both
// phases, so its running max m, partial row sums l and the rescale factor stay in registers
// (a vec4 over the 4 rows of a group). (Rows strided by NY rather than RM ty..: the Q reads of
// the NY-consecutive invocations of a warp then fall in distinct banks.)
//   S-phase (per K/V tile of BK = 64 keys): S[RM rows][TC keys] with keys tx + NX*j, j < TC, as
//            RG TC vec4 (over the rows of a group). Q and K are staged in their natural layout
//            (row-major, rows padded by one vec4 against bank conflicts) in chunks of DC head-dim
//            columns; one step reads RM Q rows and TC K rows as vec4 over 4 depths and does
//            4 RM TC fmas.
//   softmax: partial row maxima through workgroup memory (NX RG vec4 reads per invocation),
//            then P = exp2(S*scale - m) written transposed (pt[key][row quad], vec4 over rows).
//   PV-phase: V staged in chunks of KC keys (natural layout); per key RG vec4 of P (RM rows)
//            and QPT vec4 of V (column quads tx + NX*c) feed 4 RM QPT fmas into acc[r*QPT + c]
//            (row r, columns 4(tx + NX*c)..+3). DP = 4 * NX * QPT, RM * QPT <= 16.
// RG = 2 doubles the work per staged value (and per barrier) of RG = 1 with half the
// invocations for the same BQ.
// PH = 2 keeps the probabilities of half the tile's keys in pt at a time (keys tx + NX*j of the
// first TH = TC/2 j, then, after the V chunks of the first half, those of the others, kept in
// registers meanwhile): half the workgroup memory of pt for one more barrier per tile, so that
// BQ = 128 fits 48 KiB.
// Every Q/K chunk and V chunk goes through a ring of two slots: while the chunk in one slot is
// used, the next one (the next Q/K chunk, the first V chunk after the last Q/K chunk, the first
// Q/K chunk of the next tile after the last V chunk) is fetched from global memory into
// registers and then stored into the other slot, so each chunk costs one barrier; NC = DP / DC
// and NV = BK / KC are even, so chunk c of a tile always uses slot c % 2 (S) or c % 2 (PV). Per
// tile NC + NV + 2 barriers (the 2: max exchange, P). The row-max exchange uses slot 1, free at
// that point (its last Q/K chunk is consumed and the first V chunk sits in slot 0).
// Global memory is read in quads (4 consecutive head-dim columns of a row; QQ, KQ, VQ per
// invocation and chunk) and staged with vec4 stores; with VEC loaders (head_dim and the operand
// offsets multiples of 4) a quad is one 16-byte load (8 for f16) of a vec4 binding.
// Register arrays are only indexed by constants (unrolled loops), so they stay in registers.
// SPLIT == false: writes o = acc / l (0 for a row whose keys are all masked).
// SPLIT == true:  writes the partial record (m, l, acc[0..head_dim)) of its split to the scratch
//                 buffer bound as `o`; attention_combine.wgsl merges the splits.
//
// Placeholders: ENABLE, STORAGE (f16/f32/f64), COMPUTE (f32/f64), OUT (STORAGE or COMPUTE),
// BQ, TC (4 or 8), TH (= TC / 2), NX (= 64 / TC), RG (1 or 2), RM (= 4 RG), SN (= TC RG),
// PH (1 or 2), NT (= NX * BQ / RM), DP (padded head dim = 4 NX QPT), QPT (1..16 / RM), DC (8 or
// 16), DC4 (= DC / 4), KC (V keys per chunk, 4..32), QQ / KQ (Q / K quads fetched per
// invocation and chunk, QQ + KQ <= 4), VQ (V quads per invocation and chunk, <= 4), SLOT4 (vec4
// per ring slot), SPLIT, NEG (most negative finite COMPUTE value), EXP2, QKV (element type of the
// q, k, v bindings: STORAGE, or vec4<STORAGE> when VEC), LOADERS (the ld4_* functions).
//#include common
//#include attention_common
//#include attention_params

alias S = {{STORAGE}};
alias T = {{COMPUTE}};
alias out_t = {{OUT}};  // the element type of o: STORAGE, or COMPUTE for split records

const BQ: u32 = {{BQ}}u;
const BK: u32 = 64u;
const TC: u32 = {{TC}}u;
const NX: u32 = {{NX}}u;
const RG: u32 = {{RG}}u;            // groups of 4 query rows per invocation
const RM: u32 = {{RM}}u;            // query rows per invocation (4 RG)
const SN: u32 = {{SN}}u;            // score vec4 per invocation (TC RG)
const TH: u32 = {{TH}}u;            // TC / 2
const PH: u32 = {{PH}}u;            // parts of the tile's keys whose probabilities pt holds in turn
const PK: u32 = BK / PH;            // keys in pt
const NY: u32 = BQ / RM;
const NT: u32 = {{NT}}u;
const DP: u32 = {{DP}}u;
const QPT: u32 = {{QPT}}u;
const DC: u32 = {{DC}}u;
const DC4: u32 = {{DC4}}u;
const RS4: u32 = DC4 + 1u;          // vec4 stride of a staged Q/K row
const NC: u32 = DP / DC;            // Q/K chunks per tile (even)
const KC: u32 = {{KC}}u;
const NV: u32 = BK / KC;            // V chunks per tile (even)
const QQ: u32 = {{QQ}}u;            // Q quads fetched per invocation and chunk
const KQ: u32 = {{KQ}}u;            // K quads (QQ + KQ <= 4)
const VQ: u32 = {{VQ}}u;            // V quads (<= 4)
const QRSTEP: u32 = NT / DC4;       // rows between an invocation's Q/K quads
const SLOT4: u32 = {{SLOT4}}u;
const K4: u32 = BQ * RS4;           // vec4 offset of the K rows in a slot
const PTS: u32 = NY * RG + 1u;      // vec4 stride of one key's row in pt (padded)
const XS: u32 = NY * RG + 1u;       // vec4 stride of one tx's partials in the row exchanges
const DP4: u32 = DP / 4u;
const SPLIT: bool = {{SPLIT}};
const NEG: T = {{NEG}};

@group(0) @binding(1) var<storage, read> q: array<{{QKV}}>;
@group(0) @binding(2) var<storage, read> k: array<{{QKV}}>;
@group(0) @binding(3) var<storage, read> v: array<{{QKV}}>;
@group(0) @binding(4) var<storage, read_write> o: array<out_t>;

// Two slots: Q rows [BQ][RS4] then K rows [BK][RS4] of a chunk, or V [KC][DP4] of a chunk.
var<workgroup> ring: array<vec4<T>, 2u * SLOT4>;
// Probabilities, transposed: pt[(key % PK) * PTS + ty * RG + h] holds rows ty + NY*(4h + i)
// (i < 4) of that key.
var<workgroup> pt: array<vec4<T>, PK * PTS>;

// Per-invocation constants of the global loads.
struct Ctx {
    qo: u32,         // q index of this invocation's first Q quad (row row0 + row, columns 4dq..)
    ko: u32,         // k index of its first K quad, less kv0 * head_dim
    vo: u32,         // v index of its first V quad, less j0 * head_dim (when NT % DP4 == 0)
    vb: u32,         // v index of this (batch, head)'s first key
    row: u32,        // tid / DC4: row (key) of its first Q (K) quad in a chunk
    dq: u32,         // tid % DC4: column quad of its Q/K quads in a chunk
    rows_left: u32,  // seq_q - row0
    kv_hi: u32,      // exclusive key limit of this block
    hd: u32,
    tid: u32,
    full_q: bool,    // every row of the block exists and head_dim == DP
}

// Global quad loads (LOADERS: attention_flash_quad_loads.wgsl when VEC, else
// attention_flash_scalar_loads.wgsl; ops_attention picks one): ld4_X(i) reads elements i..i+3
// of X as a vec4<T>; ld4_Xm(i, ok, n) the same with components c >= n (or all when !ok) 0 and
// never read out of range. With VEC the bindings are arrays of vec4 (head_dim and every `first` are
// multiples of 4, so i is too and a quad is whole or outside: n is 0 or at least 4).
{{LOADERS}}

// Columns of the head dim left from column col (0 past the end).
fn cols_left(col: u32, hd: u32) -> u32 {
    return select(0u, hd - col, col < hd);
}

// Q/K chunk at depth d0 of the tile at kv0 into fr[0..QQ) (Q quads) and fr[QQ..QQ+KQ) (K).
fn fetch_qk(fr: ptr<function, array<vec4<T>, 4>>, c: Ctx, d0: u32, kv0: u32) {
    let qstep = QRSTEP * c.hd;
    let qb = c.qo + d0;
    let kb = c.ko + kv0 * c.hd + d0;
    if (c.full_q && kv0 + BK <= c.kv_hi) {
        //#unroll
        for (var n = 0u; n < QQ; n++) {
            (*fr)[n] = ld4_q(qb + n * qstep);
        }
        //#unroll
        for (var n = 0u; n < KQ; n++) {
            (*fr)[QQ + n] = ld4_k(kb + n * qstep);
        }
    } else {
        let nc = cols_left(d0 + 4u * c.dq, c.hd);
        //#unroll
        for (var n = 0u; n < QQ; n++) {
            (*fr)[n] = ld4_qm(qb + n * qstep, c.row + n * QRSTEP < c.rows_left, nc);
        }
        //#unroll
        for (var n = 0u; n < KQ; n++) {
            (*fr)[QQ + n] = ld4_km(kb + n * qstep, kv0 + c.row + n * QRSTEP < c.kv_hi, nc);
        }
    }
}

fn stage_qk(fr: ptr<function, array<vec4<T>, 4>>, base: u32, c: Ctx) {
    let at = base + c.row * RS4 + c.dq;
    //#unroll
    for (var n = 0u; n < QQ; n++) {
        ring[at + n * QRSTEP * RS4] = (*fr)[n];
    }
    //#unroll
    for (var n = 0u; n < KQ; n++) {
        ring[at + K4 + n * QRSTEP * RS4] = (*fr)[QQ + n];
    }
}

// V chunk of KC keys from key j0 into fr[0..VQ): quad e = tid + n * NT is (key e / DP4,
// columns 4 (e % DP4)..+3).
fn fetch_v(fr: ptr<function, array<vec4<T>, 4>>, c: Ctx, j0: u32) {
    if (NT % DP4 == 0u) {
        let vb = c.vo + j0 * c.hd;
        let vstep = (NT / DP4) * c.hd;
        if (c.hd == DP && j0 + KC <= c.kv_hi) {
            //#unroll
            for (var n = 0u; n < VQ; n++) {
                (*fr)[n] = ld4_v(vb + n * vstep);
            }
        } else {
            let nc = cols_left(4u * (c.tid % DP4), c.hd);
            //#unroll
            for (var n = 0u; n < VQ; n++) {
                (*fr)[n] = ld4_vm(vb + n * vstep, j0 + c.tid / DP4 + n * (NT / DP4) < c.kv_hi, nc);
            }
        }
    } else {
        //#unroll
        for (var n = 0u; n < VQ; n++) {
            let e = c.tid + n * NT;
            let j = j0 + e / DP4;
            let col = 4u * (e % DP4);
            (*fr)[n] = ld4_vm(c.vb + j * c.hd + col, j < c.kv_hi, cols_left(col, c.hd));
        }
    }
}

fn stage_v(fr: ptr<function, array<vec4<T>, 4>>, base: u32, c: Ctx) {
    //#unroll
    for (var n = 0u; n < VQ; n++) {
        ring[base + c.tid + n * NT] = (*fr)[n];
    }
}

fn exp2v(x: vec4<T>) -> vec4<T> {
    return vec4<T>({{EXP2}}(x.x), {{EXP2}}(x.y), {{EXP2}}(x.z), {{EXP2}}(x.w));
}

// acc + a . b as a chain of fmas.
fn dot_acc(acc: T, a: vec4<T>, b: vec4<T>) -> T {
    return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, acc))));
}

@compute @workgroup_size(NT)
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

    let tx = tid % NX;
    let ty = tid / NX;
    let hd = params.head_dim;
    let seq_q = params.seq_q;
    let seq_kv = params.seq_kv;
    let row0 = qb * BQ;
    let row_first = row0 + ty;      // rows row_first + NY * r, r < RM
    let scale = T(params.scale_hi) + T(params.scale_lo);

    let kv_lo = split * params.split_len;
    let kv_end = min(seq_kv, kv_lo + params.split_len);
    var kv_hi = kv_end;
    // Exclusive key limit of each of this invocation's rows.
    var row_lim: array<vec4<i32>, RG>;
    //#unroll
    for (var h = 0u; h < RG; h++) {
        row_lim[h] = vec4<i32>(i32(kv_end));
    }
    if (params.causal != 0u) {
        // Key j is visible to row i when j <= i + seq_kv - seq_q.
        let last_row = i32(min(row0 + BQ, seq_q)) - 1;
        kv_hi = u32(clamp(last_row + params.causal_shift + 1, i32(kv_lo), i32(kv_end)));
        //#unroll
        for (var h = 0u; h < RG; h++) {
            let own = vec4<i32>(i32(row_first + 4u * h * NY)) + vec4<i32>(0, i32(NY), 2 * i32(NY), 3 * i32(NY))
                      + vec4<i32>(params.causal_shift + 1);
            row_lim[h] = min(row_lim[h], own);
        }
    }

    var c: Ctx;
    c.row = tid / DC4;
    c.dq = tid % DC4;
    c.qo = params.q_first + (bh * seq_q + row0 + c.row) * hd + 4u * c.dq;
    c.ko = params.k_first + (bh * seq_kv + c.row) * hd + 4u * c.dq;
    c.vb = params.v_first + bh * seq_kv * hd;
    c.vo = c.vb + (tid / DP4) * hd + 4u * (tid % DP4);
    c.rows_left = seq_q - row0;
    c.kv_hi = kv_hi;
    c.hd = hd;
    c.tid = tid;
    c.full_q = row0 + BQ <= seq_q && hd == DP;

    var m: array<vec4<T>, RG>;
    var l: array<vec4<T>, RG>;
    //#unroll
    for (var h = 0u; h < RG; h++) {
        m[h] = vec4<T>(NEG);
        l[h] = vec4<T>(T(0));
    }
    var acc: array<vec4<T>, 16>;
    //#unroll
    for (var i = 0u; i < 16u; i++) {
        acc[i] = vec4<T>(T(0));
    }
    var fr: array<vec4<T>, 4>;

    if (kv_lo < kv_hi) {
        fetch_qk(&fr, c, 0u, kv_lo);
        stage_qk(&fr, 0u, c);
        workgroupBarrier();
    }
    for (var kv0 = kv_lo; kv0 < kv_hi; kv0 += BK) {
        // ---- S = Q K^T, chunk by chunk of DC head-dim columns ----
        var s: array<vec4<T>, SN>;  // s[h * TC + j]: rows of group h, key tx + NX*j
        //#unroll
        for (var j = 0u; j < SN; j++) {
            s[j] = vec4<T>(T(0));
        }
        for (var ch = 0u; ch < NC; ch++) {
            let last = ch + 1u == NC;
            if (last) {
                fetch_v(&fr, c, kv0);
            } else {
                fetch_qk(&fr, c, (ch + 1u) * DC, kv0);
            }
            let base = (ch & 1u) * SLOT4;
            //#unroll
            for (var dq = 0u; dq < DC4; dq++) {
                let qa = base + ty * RS4 + dq;
                var qr: array<vec4<T>, RM>;
                //#unroll
                for (var r = 0u; r < RM; r++) {
                    qr[r] = ring[qa + r * NY * RS4];
                }
                //#unroll
                for (var j = 0u; j < TC; j++) {
                    let kq = ring[base + K4 + (tx + NX * j) * RS4 + dq];
                    //#unroll
                    for (var h = 0u; h < RG; h++) {
                        let sj = s[h * TC + j];
                        s[h * TC + j] = vec4<T>(dot_acc(sj.x, qr[4u * h], kq), dot_acc(sj.y, qr[4u * h + 1u], kq),
                                                dot_acc(sj.z, qr[4u * h + 2u], kq), dot_acc(sj.w, qr[4u * h + 3u], kq));
                    }
                }
            }
            let nxt = ((ch + 1u) & 1u) * SLOT4;
            if (last) {
                stage_v(&fr, nxt, c);
            } else {
                stage_qk(&fr, nxt, c);
            }
            workgroupBarrier();
        }

        // ---- online softmax (slot 1 is free: exchange the partial row maxima there) ----
        let key0 = i32(kv0 + tx);
        //#unroll
        for (var h = 0u; h < RG; h++) {
            var pmax = vec4<T>(NEG);
            //#unroll
            for (var j = 0u; j < TC; j++) {
                let mk = vec4<i32>(key0 + i32(NX * j)) < row_lim[h];
                s[h * TC + j] = select(vec4<T>(NEG), s[h * TC + j] * scale, mk);
                pmax = max(pmax, s[h * TC + j]);
            }
            ring[SLOT4 + tx * XS + ty * RG + h] = pmax;
        }
        workgroupBarrier();
        //#unroll
        for (var h = 0u; h < RG; h++) {
            var mx = m[h];
            //#unroll
            for (var t = 0u; t < NX; t++) {
                mx = max(mx, ring[SLOT4 + t * XS + ty * RG + h]);
            }
            let alpha = exp2v(m[h] - mx);
            m[h] = mx;
            var psum = vec4<T>(T(0));
            //#unroll
            for (var j = 0u; j < TC; j++) {
                let mk = vec4<i32>(key0 + i32(NX * j)) < row_lim[h];
                let p = select(vec4<T>(T(0)), exp2v(s[h * TC + j] - mx), mk);
                if (PH == 1u || j < TH) {
                    pt[(tx + NX * j) * PTS + ty * RG + h] = p;
                }
                s[h * TC + j] = p;  // (PH = 2: the second half is staged later)
                psum += p;
            }
            l[h] = l[h] * alpha + psum;
            //#unroll
            for (var cq = 0u; cq < QPT; cq++) {
                acc[4u * h * QPT + cq] *= alpha.x;
                acc[(4u * h + 1u) * QPT + cq] *= alpha.y;
                acc[(4u * h + 2u) * QPT + cq] *= alpha.z;
                acc[(4u * h + 3u) * QPT + cq] *= alpha.w;
            }
        }
        workgroupBarrier();

        // ---- O += P V, chunk by chunk of KC keys ----
        let more_tiles = kv0 + BK < kv_hi;
        for (var vc = 0u; vc < NV; vc++) {
            let more = vc + 1u < NV;
            if (more) {
                fetch_v(&fr, c, kv0 + (vc + 1u) * KC);
            } else if (more_tiles) {
                fetch_qk(&fr, c, 0u, kv0 + BK);
            }
            let base = (vc & 1u) * SLOT4;
            if (PH == 2u && vc == NV / 2u) {
                // every chunk of the first half has read pt (the barrier above): the second half
                //#unroll
                for (var h = 0u; h < RG; h++) {
                    //#unroll
                    for (var jj = 0u; jj < TH; jj++) {
                        pt[(tx + NX * jj) * PTS + ty * RG + h] = s[h * TC + TH + jj];
                    }
                }
                workgroupBarrier();
            }
            let pb = ((vc * KC) % PK) * PTS + ty * RG;
            //#unroll
            for (var kk = 0u; kk < KC; kk++) {
                var p: array<vec4<T>, RG>;
                //#unroll
                for (var h = 0u; h < RG; h++) {
                    p[h] = pt[pb + kk * PTS + h];
                }
                //#unroll
                for (var cq = 0u; cq < QPT; cq++) {
                    let vq = ring[base + kk * DP4 + tx + NX * cq];
                    //#unroll
                    for (var h = 0u; h < RG; h++) {
                        let a0 = 4u * h * QPT + cq;
                        acc[a0] = fma(vec4<T>(p[h].x), vq, acc[a0]);
                        acc[a0 + QPT] = fma(vec4<T>(p[h].y), vq, acc[a0 + QPT]);
                        acc[a0 + 2u * QPT] = fma(vec4<T>(p[h].z), vq, acc[a0 + 2u * QPT]);
                        acc[a0 + 3u * QPT] = fma(vec4<T>(p[h].w), vq, acc[a0 + 3u * QPT]);
                    }
                }
            }
            let nxt = ((vc + 1u) & 1u) * SLOT4;
            if (more) {
                stage_v(&fr, nxt, c);
            } else if (more_tiles) {
                stage_qk(&fr, nxt, c);
            }
            workgroupBarrier();
        }
    }

    // ---- row sums across the NX invocations of a row (slot 0; every slot is free now) ----
    //#unroll
    for (var h = 0u; h < RG; h++) {
        ring[tx * XS + ty * RG + h] = l[h];
    }
    workgroupBarrier();
    var lsum: array<vec4<T>, RG>;
    var inv: array<vec4<T>, RG>;
    //#unroll
    for (var h = 0u; h < RG; h++) {
        var ls = vec4<T>(T(0));
        //#unroll
        for (var t = 0u; t < NX; t++) {
            ls += ring[t * XS + ty * RG + h];
        }
        lsum[h] = ls;
        inv[h] = select(vec4<T>(T(0)), vec4<T>(T(1)) / select(vec4<T>(T(1)), ls, ls > vec4<T>(T(0))),
                        ls > vec4<T>(T(0)));
    }

    //#unroll
    for (var r = 0u; r < RM; r++) {
        let row = row_first + NY * r;
        if (row < seq_q) {
            let out_row = bh * seq_q + row;
            let rec = params.o_first + (out_row * params.splits + split) * (hd + 2u);
            if (SPLIT && tx == 0u) {
                o[rec] = out_t(m[r / 4u][r % 4u]);
                o[rec + 1u] = out_t(lsum[r / 4u][r % 4u]);
            }
            //#unroll
            for (var cq = 0u; cq < QPT; cq++) {
                let col0 = 4u * (tx + NX * cq);
                var a = acc[r * QPT + cq];
                if (!SPLIT) {
                    a *= inv[r / 4u][r % 4u];
                }
                //#unroll
                for (var e = 0u; e < 4u; e++) {
                    let col = col0 + e;
                    if (col < hd) {
                        if (SPLIT) {
                            o[rec + 2u + col] = out_t(a[e]);
                        } else {
                            o[params.o_first + out_row * hd + col] = out_t(a[e]);
                        }
                    }
                }
            }
        }
    }
}
