// var / std. The state of a chunk is (mean, M2 = sum of squared deviations, count). From the
// source a workgroup takes two passes over its chunk: the chunk's mean, then the sums of
// d = x - mean and d^2, giving M2 = sum d^2 - (sum d)^2 / n and the corrected mean
// mean + (sum d) / n (the "corrected two-pass" algorithm). Chunks and partial states combine
// with Chan et al.'s pairwise update, in a fixed order. `finish` maps the variance
// M2 / max(n - ddof, 0) to the output (sqrt for std). See reduce_common.wgsl.
//
// Vector path (VEC: a first pass over a reduced range that is one dim of stride 1, of an
// unpacked 4- or 8-byte dtype): one pass. As in reduce_plain, the source is bound again as
// VW-lane vectors (`srcv`, same aligned byte offset); invocation y reads vectors y, y + TY, ...
// VU at a time, takes the mean and M2 of each such block of VU * VW values in registers (two
// passes over the registers) and merges the blocks into its state with Chan's update; the
// head and tail elements off whole vectors merge one by one. Values are shifted by the output's
// first element `k` (reduced index 0, read by every invocation of the output), so that the
// means merged are of the deviations' size, not of the data's (a NaN or infinite `k` is in the
// range: the result is NaN either way). Then the TY states merge in a fixed tree. Partial
// states keep the shifted mean: every chunk of an output shifts by the same `k` (the planner
// takes this path only for a reduction in one piece), Chan's update depends on differences of
// means only, and the output is M2's.

//#include reduce_common

const VEC: bool = {{VEC}};
const VW: u32 = {{VW}}u;   // lanes of a vector load (16 bytes / item size)
const VU: u32 = {{VU}}u;   // vector loads in flight per invocation
const YS: u32 = select(TX, 1u, VEC);

struct State {
    mean: {{ACC}},
    m2: {{ACC}},
    n: u32,
}

@group(0) @binding(3) var<storage, read_write> paux: array<{{ACC}}>;
@group(0) @binding(4) var<storage, read_write> pidx: array<u32>;

var<workgroup> sh_v: array<{{ACC}}, WG>;
var<workgroup> sh_a: array<{{ACC}}, WG>;
var<workgroup> sh_n: array<u32, WG>;

fn chan(a: State, b: State) -> State {
    if (a.n == 0u) {
        return b;
    }
    if (b.n == 0u) {
        return a;
    }
    let n = a.n + b.n;
    let fa = {{ACC}}(a.n);
    let fb = {{ACC}}(b.n);
    let fn_ = {{ACC}}(n);
    let d = b.mean - a.mean;
    return State(a.mean + d * (fb / fn_), a.m2 + b.m2 + d * d * (fa * fb / fn_), n);
}

fn finish(v: {{ACC}}) -> {{DST}} {
    return {{FINISH}};
}

// `srcv` and `load_vec(v)` in the vector path; else a stub that only type-checks.
{{VEC_SRC}}

// The state of the block of values xs (VU vectors).
fn block_state(xs: array<{{VEC_T}}, VU>, k: {{ACC}}) -> State {
    var s = {{ACC}}(0);
    //#unroll
    for (var u = 0u; u < VU; u++) {
        //#unroll
        for (var l = 0u; l < VW; l++) {
            s += to_acc(xs[u][l]) - k;
        }
    }
    let m = s / {{ACC}}(VU * VW);
    var q = {{ACC}}(0);
    //#unroll
    for (var u = 0u; u < VU; u++) {
        //#unroll
        for (var l = 0u; l < VW; l++) {
            let d = (to_acc(xs[u][l]) - k) - m;
            q += d * d;
        }
    }
    return State(m, q, VU * VW);
}

// The state of the vector x.
fn vector_state(x: {{VEC_T}}, k: {{ACC}}) -> State {
    var s = {{ACC}}(0);
    //#unroll
    for (var l = 0u; l < VW; l++) {
        s += to_acc(x[l]) - k;
    }
    let m = s / {{ACC}}(VW);
    var q = {{ACC}}(0);
    //#unroll
    for (var l = 0u; l < VW; l++) {
        let d = (to_acc(x[l]) - k) - m;
        q += d * d;
    }
    return State(m, q, VW);
}

// Vector path: the state of elements [e0, e1) of the source binding that invocation y of the
// chunk's TY takes, each value less k.
fn var_vec(e0: u32, e1: u32, y: u32, k: {{ACC}}) -> State {
    let zero = {{ACC}}(0);
    let v0 = (e0 + VW - 1u) / VW;
    let v1 = e1 / VW;
    let h = min(v0 * VW, e1);
    let t = max(v1 * VW, h);
    var st = State(zero, zero, 0u);
    for (var i = e0 + y; i < h; i += TY) {
        st = chan(st, State(to_acc(load_src(i)) - k, zero, 1u));
    }
    var v = v0 + y;
    for (; v + (VU - 1u) * TY < v1; v += VU * TY) {
        var xs: array<{{VEC_T}}, VU>;
        //#unroll
        for (var u = 0u; u < VU; u++) {
            xs[u] = load_vec(v + u * TY);
        }
        st = chan(st, block_state(xs, k));
    }
    for (; v < v1; v += TY) {
        st = chan(st, vector_state(load_vec(v), k));
    }
    for (var i = t + y; i < e1; i += TY) {
        st = chan(st, State(to_acc(load_src(i)) - k, zero, 1u));
    }
    return st;
}

@compute @workgroup_size({{TX}} * {{TY}})
fn main(@builtin(local_invocation_index) li: u32,
        @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    // 1-D workgroup (SIMD lanes follow the linear index on every adapter), viewed as TX x TY.
    // In the vector path y is fastest (consecutive invocations read consecutive vectors of one
    // output); YS is the step of the linear index along y.
    let lid = select(vec2<u32>(li % TX, li / TX), vec2<u32>(li / TY, li % TY), VEC);
    let g = linear_group(wid, nwg);
    if (g >= params.ktiles * params.nchunks) {
        return;
    }
    let chunk = g / params.ktiles;
    let k = (g % params.ktiles) * TX + lid.x;
    let kvalid = k < params.nkeep;
    let ko = keep_offsets(min(k, params.nkeep - 1u));
    let j0 = chunk * params.chunk_len;
    let j1 = j0 + min(params.chunk_len, params.nred - min(j0, params.nred));
    let jend = select(j0, j1, kvalid);
    let me = li;
    let zero = {{ACC}}(0);

    var st = State(zero, zero, 0u);
    var shift = zero;  // the vector path's shift of the values (see the top of the file)
    if (IN_PARTIAL || VEC) {
        if (IN_PARTIAL) {
            for (var j = j0 + lid.y; j < jend; j += TY) {
                st = chan(st, State(load_partial(ko.x + j), paux[ko.x + j], pidx[ko.x + j]));
            }
        } else if (kvalid) {
            let e0 = params.src_first + ko.x + j0;
            shift = to_acc(load_src(params.src_first + ko.x));
            st = var_vec(e0, e0 + (j1 - j0), lid.y, shift);
        }
        if (TY > 1u) {
            sh_v[me] = st.mean;
            sh_a[me] = st.m2;
            sh_n[me] = st.n;
            for (var s = TY / 2u; s > 0u; s = s / 2u) {
                workgroupBarrier();
                if (lid.y < s) {
                    st = chan(st, State(sh_v[me + s * YS], sh_a[me + s * YS], sh_n[me + s * YS]));
                    sh_v[me] = st.mean;
                    sh_a[me] = st.m2;
                    sh_n[me] = st.n;
                }
            }
        }
    } else {
        let base = params.src_first + ko.x;
        // Pass 1: the chunk's sum, then its mean, shared by the column's invocations.
        var s1 = zero;
        for (var j = j0 + lid.y; j < jend; j += TY) {
            s1 += to_acc(load_src(base + red_offsets(j).x));
        }
        if (TY > 1u) {
            sh_v[me] = s1;
            for (var s = TY / 2u; s > 0u; s = s / 2u) {
                workgroupBarrier();
                if (lid.y < s) {
                    s1 += sh_v[me + s * TX];
                    sh_v[me] = s1;
                }
            }
            workgroupBarrier();
            s1 = sh_v[lid.x];
            workgroupBarrier();
        }
        let n = j1 - j0;
        let fn_ = {{ACC}}(max(n, 1u));
        let m0 = s1 / fn_;
        // Pass 2: sums of the deviations and of their squares.
        var d1 = zero;
        var d2 = zero;
        for (var j = j0 + lid.y; j < jend; j += TY) {
            let d = to_acc(load_src(base + red_offsets(j).x)) - m0;
            d1 += d;
            d2 += d * d;
        }
        if (TY > 1u) {
            sh_v[me] = d1;
            sh_a[me] = d2;
            for (var s = TY / 2u; s > 0u; s = s / 2u) {
                workgroupBarrier();
                if (lid.y < s) {
                    d1 += sh_v[me + s * TX];
                    d2 += sh_a[me + s * TX];
                    sh_v[me] = d1;
                    sh_a[me] = d2;
                }
            }
        }
        let m2 = d2 - d1 * d1 / fn_;
        // Rounding can leave M2 a hair below 0; clamp, but keep NaN (written with an explicit
        // bit test: a compiler may turn a compare-and-select clamp into a NaN-dropping max).
        st = State(m0 + d1 / fn_, select(max(m2, zero), m2, acc_is_nan(m2)), n);
    }

    if (lid.y == 0u && kvalid) {
        if (OUT_PARTIAL) {
            let slot = k * params.slots + params.slot_base + chunk;
            store_partial(slot, st.mean);
            paux[slot] = st.m2;
            pidx[slot] = st.n;
        } else {
            let dof = max({{ACC}}(st.n) - {{ACC}}(params.ddof), zero);
            store_dst(params.dst_first + ko.y, finish(st.m2 / dof));
        }
    }
}
