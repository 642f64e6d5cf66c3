{{ENABLE}}
// Attention for few query rows (decoding, ops_attention.py): one workgroup of 256 invocations per
// (batch*head, query row, split of the key/value sequence); with several splits this is
// flash-decoding, so a single query row still spreads over the whole GPU.
//
// Per tile of BK = 64 keys:
//   scores: 16 groups of 16 lanes; a group takes 4 keys, its lanes stride over the head dim
//           (coalesced loads of K), the 16 partial dots of a key meet in workgroup memory;
//   softmax: invocations 0..63 finish one key each; the tile max is read by every invocation;
//           running max m, per-key-slot partial sums l, rescale exp2(m_old - m_new);
//   PV:     invocation t owns column t % DP for keys t / DP, t / DP + NG, ... (coalesced loads of V).
// Loads are batched (16 K or 8 V loads before their first use): naga bounds every SPIR-V loop
// with a counter, so drivers do not unroll loops, and a load used in its own iteration would cost
// a full memory latency each time.
// SPLIT == false: writes o = acc / l (0 for a row whose keys are all masked).
// SPLIT == true:  writes the record (m, l, acc[0..head_dim)) to the scratch buffer bound as `o`.
//
// Placeholders: ENABLE, STORAGE, COMPUTE, OUT, DP (padded head dim), SPLIT, NEG, EXP2.
//#include common
//#include attention_common
//#include attention_params

alias S = {{STORAGE}};
alias T = {{COMPUTE}};
alias out_t = {{OUT}};  // the element type of o: STORAGE, or COMPUTE for split records

const WG: u32 = 256u;
const BK: u32 = 64u;
const LANES: u32 = 16u;             // lanes per key in the score phase
const GROUPS: u32 = WG / LANES;     // keys scored at once (BK = 4 GROUPS)
const RS: u32 = LANES + 1u;         // padded stride of the partial dots
const DP: u32 = {{DP}}u;
const NG: u32 = WG / DP;            // key groups of the PV phase
const SPLIT: bool = {{SPLIT}};
const NEG: T = {{NEG}};

@group(0) @binding(1) var<storage, read> q: array<S>;
@group(0) @binding(2) var<storage, read> k: array<S>;
@group(0) @binding(3) var<storage, read> v: array<S>;
@group(0) @binding(4) var<storage, read_write> o: array<out_t>;

var<workgroup> qs: array<T, DP + 48u>;   // zero padded: batches may read past DP
var<workgroup> red: array<T, BK * RS>;
var<workgroup> scores: array<vec4<T>, BK / 4u>;
var<workgroup> probs: array<T, BK>;

// Partial dot of key row `kr` (valid: ok) with q over d, d + 16, d + 32, d + 48.
fn kdot4(kr: u32, ok: bool, d: u32) -> T {
    let hd = params.head_dim;
    var x = vec4<T>(T(0));
    let o0 = ok && d < hd;
    let o1 = ok && d + 16u < hd;
    let o2 = ok && d + 32u < hd;
    let o3 = ok && d + 48u < hd;
    let f = params.k_first;
    let kv = vec4<T>(
        select(T(0), T(k[select(f, kr + d, o0)]), o0),
        select(T(0), T(k[select(f, kr + d + 16u, o1)]), o1),
        select(T(0), T(k[select(f, kr + d + 32u, o2)]), o2),
        select(T(0), T(k[select(f, kr + d + 48u, o3)]), o3));
    return dot(kv, vec4<T>(qs[d], qs[d + 16u], qs[d + 32u], qs[d + 48u]));
}

// probs[jj] * v[row of key jj, column col] for a key slot jj (0 past `keys`).
fn pv_term(jj: u32, keys: u32, row0: u32, col: u32) -> T {
    let ok = jj < keys;
    let idx = select(params.v_first, row0 + jj * params.head_dim + col, ok);
    return select(T(0), probs[min(jj, BK - 1u)] * T(v[idx]), ok);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let g = linear_group(wid, nwg);
    let seq_q = params.seq_q;
    if (g >= params.n_bh * params.splits * seq_q) {
        return;
    }
    let row = g % seq_q;
    let rest = g / seq_q;
    let split = rest % params.splits;
    let bh = rest / params.splits;

    let hd = params.head_dim;
    let k_base = params.k_first + bh * params.seq_kv * hd;
    let v_base = params.v_first + bh * params.seq_kv * hd;
    let scale = T(params.scale_hi) + T(params.scale_lo);

    let kv_lo = split * params.split_len;
    var kv_hi = min(params.seq_kv, kv_lo + params.split_len);
    if (params.causal != 0u) {
        let lim = i32(row) + params.causal_shift + 1;
        kv_hi = u32(clamp(lim, i32(kv_lo), i32(kv_hi)));
    }

    let q_base = params.q_first + (bh * seq_q + row) * hd;
    for (var d = tid; d < DP + 48u; d += WG) {
        var val = T(0);
        if (d < hd) {
            val = T(q[q_base + d]);
        }
        qs[d] = val;
    }
    workgroupBarrier();

    let lane = tid % LANES;
    let grp = tid / LANES;
    let col = tid % DP;
    let kgrp = tid / DP;
    var m = NEG;
    var l = T(0);       // partial sum of key slot tid (tid < BK)
    var acc = T(0);     // column col, keys kgrp, kgrp + NG, ...

    for (var kv0 = kv_lo; kv0 < kv_hi; kv0 += BK) {
        // Keys grp, grp + 16, grp + 32, grp + 48 of the tile; 16 loads per step.
        let j0 = kv0 + grp;
        let kr0 = k_base + j0 * hd;
        let kstep = GROUPS * hd;
        let ok0 = j0 < kv_hi;
        let ok1 = j0 + GROUPS < kv_hi;
        let ok2 = j0 + 2u * GROUPS < kv_hi;
        let ok3 = j0 + 3u * GROUPS < kv_hi;
        var part = vec4<T>(T(0));
        for (var d = lane; d < hd; d += 4u * LANES) {
            part += vec4<T>(kdot4(kr0, ok0, d), kdot4(kr0 + kstep, ok1, d),
                            kdot4(kr0 + 2u * kstep, ok2, d), kdot4(kr0 + 3u * kstep, ok3, d));
        }
        red[grp * RS + lane] = part.x;
        red[(grp + GROUPS) * RS + lane] = part.y;
        red[(grp + 2u * GROUPS) * RS + lane] = part.z;
        red[(grp + 3u * GROUPS) * RS + lane] = part.w;
        workgroupBarrier();
        if (tid < BK) {
            var dot = T(0);
            for (var i = 0u; i < LANES; i++) {
                dot += red[tid * RS + i];
            }
            var sc = NEG;
            if (kv0 + tid < kv_hi) {
                sc = dot * scale;
            }
            scores[tid / 4u][tid % 4u] = sc;
        }
        workgroupBarrier();
        var mx = m;
        for (var i = 0u; i < BK / 4u; i++) {
            let s4 = scores[i];
            mx = max(mx, max(max(s4.x, s4.y), max(s4.z, s4.w)));
        }
        let alpha = {{EXP2}}(m - mx);
        m = mx;
        acc *= alpha;
        if (tid < BK) {
            var p = T(0);
            if (kv0 + tid < kv_hi) {
                p = {{EXP2}}(scores[tid / 4u][tid % 4u] - mx);
            }
            probs[tid] = p;
            l = l * alpha + p;
        }
        workgroupBarrier();
        if (kgrp < NG && col < hd) {
            let keys = min(BK, kv_hi - kv0);
            let row0 = v_base + kv0 * hd;
            for (var jj = kgrp; jj < keys; jj += 8u * NG) {
                acc += ((pv_term(jj, keys, row0, col) + pv_term(jj + NG, keys, row0, col))
                        + (pv_term(jj + 2u * NG, keys, row0, col) + pv_term(jj + 3u * NG, keys, row0, col)))
                     + ((pv_term(jj + 4u * NG, keys, row0, col) + pv_term(jj + 5u * NG, keys, row0, col))
                        + (pv_term(jj + 6u * NG, keys, row0, col) + pv_term(jj + 7u * NG, keys, row0, col)));
            }
        }
    }

    // ---- reduce acc over the key groups and l over the key slots ----
    workgroupBarrier();
    red[tid] = acc;
    if (tid < BK) {
        red[WG + tid] = l;
    }
    workgroupBarrier();
    if (tid < hd) {
        var a = T(0);
        for (var i = 0u; i < NG; i++) {
            a += red[i * DP + tid];
        }
        var lsum = T(0);
        for (var i = 0u; i < BK; i++) {
            lsum += red[WG + i];
        }
        if (SPLIT) {
            let rec = params.o_first + ((bh * seq_q + row) * params.splits + split) * (hd + 2u);
            if (tid == 0u) {
                o[rec] = out_t(m);
                o[rec + 1u] = out_t(lsum);
            }
            o[rec + 2u + tid] = out_t(a);
        } else {
            var out = T(0);
            if (lsum > T(0)) {
                out = a / lsum;
            }
            o[params.o_first + (bh * seq_q + row) * hd + tid] = out_t(out);
        }
    }
}
