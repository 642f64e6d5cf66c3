{{ENABLE}}
// Generated row kernels (ops_row_fusion.py): per row, statistics (sum, mean, max, min of an
// elementwise function of the operands) in order, then an elementwise output of the operands
// and the statistics. BODY is generated: the operands' row offsets, the cached row values,
// one accumulation loop and row_reduce per statistic, the output loop.
//
// A workgroup of WG = TPR * RPW invocations owns RPW rows, TPR lanes per row (the layout of
// row_ops.wgsl): invocation lid has row slot (lid / R_STRIDE) % RPW and lane (lid / T_STRIDE)
// % TPR; lane t takes the row's elements t, t + TPR, t + 2 TPR, ...
// Parameter words: [0] rows, [1] n, [2] row dims, [4..8) the row dims, then per operand 8
// words (first element, step along the row, row strides as i32 bits), then the scalars.
//#include common

alias T = {{T}};

//#include row_layout

@group(0) @binding(0) var<uniform> params: array<vec4<u32>, {{NPARAM_VEC4}}>;
{{BINDINGS}}

fn P(i: u32) -> u32 {
    return params[i >> 2u][i & 3u];
}

{{HELPERS}}


fn is_nan_t(v: T) -> bool {
    return {{IS_NAN}};
}

// a + b (kind 0), max (1) or min (2), NaN propagating
fn combine(a: T, b: T, kind: u32) -> T {
    if (kind == 0u) {
        return a + b;
    }
    if (is_nan_t(a) || is_nan_t(b)) {
        return {{NAN}};
    }
    return select(min(a, b), max(a, b), kind == 1u);
}

// `value` combined over the lanes of each row (kind as `combine`); every lane gets it. Two
// levels as row_ops.wgsl's row_reduce: lanes t < RB combine RA lane values each, then every
// lane combines the RB partial results. Called by every invocation (it holds barriers).
fn row_reduce(value: T, lid: u32, slot: u32, t: u32, kind: u32) -> T {
    red[lid] = value;
    workgroupBarrier();
    let lane0 = lid - t * T_STRIDE;
    if (t < RB) {
        var acc = red[lane0 + t * RA * T_STRIDE];
        for (var a = 1u; a < RA; a++) {
            acc = combine(acc, red[lane0 + (t * RA + a) * T_STRIDE], kind);
        }
        part[slot * RB + t] = acc;
    }
    workgroupBarrier();
    var r = part[slot * RB];
    for (var b = 1u; b < RB; b++) {
        r = combine(r, part[slot * RB + b], kind);
    }
    workgroupBarrier();
    return r;
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let slot = (lid / R_STRIDE) % RPW;
    let t = (lid / T_STRIDE) % TPR;
    let row = linear_group(wid, nwg) * RPW + slot;
    let live = row < P(0u);
    // rows past the end have no elements but still take part in the barriers
    let n = select(0u, P(1u), live);
{{BODY}}
}
