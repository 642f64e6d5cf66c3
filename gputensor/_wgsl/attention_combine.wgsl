{{ENABLE}}
// Flash-decoding combine (ops_attention.py): merges the per-split partial records
// (m, l, acc[0..head_dim)) written by attention_tiled.wgsl, attention_flash.wgsl or attention_decode.wgsl with SPLIT = true.
// One invocation per output element (row, d):
//   M = max_s m_s;  o = sum_s 2^(m_s - M) acc_s[d] / sum_s 2^(m_s - M) l_s   (0 when the sum is 0,
//   i.e. every key of the row was masked).
// Placeholders: ENABLE, STORAGE (output type), COMPUTE (scratch / compute type), NEG, EXP2.
//#include common
//#include attention_common

alias S = {{STORAGE}};
alias T = {{COMPUTE}};

const WG: u32 = 256u;
const NEG: T = {{NEG}};

struct Params {
    pad0: u32,  // (first: the launch program patches words 1 and 2)
    ws_first: u32,
    o_first: u32,
    rows: u32,
    head_dim: u32,
    splits: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ws: array<T>;
@group(0) @binding(2) var<storage, read_write> o: array<S>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let hd = params.head_dim;
    let idx = linear_group(wid, nwg) * WG + tid;
    if (idx >= params.rows * hd) {
        return;
    }
    let row = idx / hd;
    let d = idx % hd;
    let stride = hd + 2u;
    let base = params.ws_first + row * params.splits * stride;
    var mx = NEG;
    for (var s = 0u; s < params.splits; s++) {
        mx = max(mx, ws[base + s * stride]);
    }
    var lsum = T(0);
    var acc = T(0);
    for (var s = 0u; s < params.splits; s++) {
        let rec = base + s * stride;
        let w = {{EXP2}}(ws[rec] - mx);
        lsum += w * ws[rec + 1u];
        acc += w * ws[rec + 2u + d];
    }
    var out = T(0);
    if (lsum > T(0)) {
        out = acc / lsum;
    }
    o[params.o_first + idx] = S(out);
}
