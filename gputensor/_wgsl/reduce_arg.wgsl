// argmax / argmin: the state is (value, reduced linear index). `better` is a total order (NaN
// first, then the larger (argmax) or smaller (argmin) value, ties to the smaller index), so the
// result is NumPy's first occurrence whatever the combination order. See reduce_common.wgsl.
//
// Vector path (VEC: a first pass over a reduced range that is one dim of stride 1 whose
// reduced index grows with the address, of an unpacked 4- or 8-byte dtype): as in reduce_plain,
// the source is bound again as VW-lane vectors (`srcv`, same aligned byte offset); invocation y
// reads vectors y, y + TY, ... (VU in flight) and keeps a best value and index per lane; the
// head before the first whole vector goes to lane 0 first, the tail after the last one to lane
// VW - 1 last, so every lane sees its elements in increasing index order and `take` (a
// shortcut of `better` for a later index) keeps the first occurrence.

//#include reduce_common

const IS_MAX: bool = {{IS_MAX}};
const VEC: bool = {{VEC}};
const VW: u32 = {{VW}}u;   // lanes of a vector load (16 bytes / item size)
const VU: u32 = {{VU}}u;   // vector loads in flight per invocation
const YS: u32 = select(TX, 1u, VEC);

@group(0) @binding(3) var<storage, read_write> pidx: array<u32>;

var<workgroup> sh_v: array<{{SH}}, WG>;
var<workgroup> sh_i: array<u32, WG>;

// Whether (a, ai) wins over (b, bi); index NONE marks "no element yet".
fn better(a: {{ACC}}, ai: u32, b: {{ACC}}, bi: u32) -> bool {
    if (bi == NONE) {
        return ai != NONE;
    }
    if (ai == NONE) {
        return false;
    }
    let an = acc_is_nan(a);
    let bn = acc_is_nan(b);
    if (an || bn) {
        if (an && bn) {
            return ai < bi;
        }
        return an;
    }
    if ({{EQ}}) {
        return ai < bi;
    }
    if (IS_MAX) {
        return {{GT}};
    }
    return {{LT}};
}

// `better(a, ai, b, bi)` for an index ai after bi (or bi == NONE).
fn take(a: {{ACC}}, b: {{ACC}}, bi: u32) -> bool {
    if (bi == NONE) {
        return true;
    }
    if (acc_is_nan(b)) {
        return false;
    }
    if (acc_is_nan(a)) {
        return true;
    }
    if (IS_MAX) {
        return {{GT}};
    }
    return {{LT}};
}

// `srcv` and `load_vec(v)` in the vector path; else a stub that only type-checks.
{{VEC_SRC}}

struct Best {
    v: {{ACC}},
    i: u32,
}

// Vector path: the best of elements [e0, e1) of the source binding that invocation y of the
// chunk's TY takes (element e has reduced index idx0 + e - e0).
fn arg_vec(e0: u32, e1: u32, y: u32, idx0: u32) -> Best {
    let v0 = (e0 + VW - 1u) / VW;
    let v1 = e1 / VW;
    let h = min(v0 * VW, e1);
    let t = max(v1 * VW, h);
    var a: array<{{ACC}}, VW>;
    var ai: array<u32, VW>;
    //#unroll
    for (var l = 0u; l < VW; l++) {
        a[l] = {{IDENTITY}};
        ai[l] = NONE;
    }
    for (var i = e0 + y; i < h; i += TY) {
        let x = to_acc(load_src(i));
        if (take(x, a[0], ai[0])) {
            a[0] = x;
            ai[0] = idx0 + (i - e0);
        }
    }
    var v = v0 + y;
    for (; v + (VU - 1u) * TY < v1; v += VU * TY) {
        var xs: array<{{VEC_T}}, VU>;
        //#unroll
        for (var u = 0u; u < VU; u++) {
            xs[u] = load_vec(v + u * TY);
        }
        //#unroll
        for (var u = 0u; u < VU; u++) {
            //#unroll
            for (var l = 0u; l < VW; l++) {
                let x = to_acc(xs[u][l]);
                if (take(x, a[l], ai[l])) {
                    a[l] = x;
                    ai[l] = idx0 + ((v + u * TY) * VW + l - e0);
                }
            }
        }
    }
    for (; v < v1; v += TY) {
        let xv = load_vec(v);
        //#unroll
        for (var l = 0u; l < VW; l++) {
            let x = to_acc(xv[l]);
            if (take(x, a[l], ai[l])) {
                a[l] = x;
                ai[l] = idx0 + (v * VW + l - e0);
            }
        }
    }
    for (var i = t + y; i < e1; i += TY) {
        let x = to_acc(load_src(i));
        if (take(x, a[VW - 1u], ai[VW - 1u])) {
            a[VW - 1u] = x;
            ai[VW - 1u] = idx0 + (i - e0);
        }
    }
    var best = Best(a[0], ai[0]);
    //#unroll
    for (var l = 0u; l < VW; l++) {
        if (better(a[l], ai[l], best.v, best.i)) {
            best = Best(a[l], ai[l]);
        }
    }
    return best;
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

    var best: {{ACC}} = {{IDENTITY}};
    var bi: u32 = NONE;
    if (kvalid) {
        if (IN_PARTIAL) {
            for (var j = j0 + lid.y; j < j1; j += TY) {
                let x = load_partial(ko.x + j);
                let xi = pidx[ko.x + j];
                if (better(x, xi, best, bi)) {
                    best = x;
                    bi = xi;
                }
            }
        } else if (VEC) {
            let e0 = params.src_first + ko.x + j0;
            let b = arg_vec(e0, e0 + (j1 - j0), lid.y, params.idx_base + j0);
            best = b.v;
            bi = b.i;
        } else {
            let base = params.src_first + ko.x;
            for (var j = j0 + lid.y; j < j1; j += TY) {
                let o = red_offsets(j);
                let x = to_acc(load_src(base + o.x));
                let xi = params.idx_base + o.y;
                if (better(x, xi, best, bi)) {
                    best = x;
                    bi = xi;
                }
            }
        }
    }

    let me = li;
    if (TY > 1u) {
        sh_v[me] = to_sh(best);
        sh_i[me] = bi;
        for (var s = TY / 2u; s > 0u; s = s / 2u) {
            workgroupBarrier();
            if (lid.y < s) {
                let x = from_sh(sh_v[me + s * YS]);
                let xi = sh_i[me + s * YS];
                if (better(x, xi, best, bi)) {
                    best = x;
                    bi = xi;
                }
                sh_v[me] = to_sh(best);
                sh_i[me] = bi;
            }
        }
    }

    if (lid.y == 0u && kvalid) {
        if (OUT_PARTIAL) {
            let slot = k * params.slots + params.slot_base + chunk;
            store_partial(slot, best);
            pidx[slot] = bi;
        } else {
            store_dst(params.dst_first + ko.y, {{FINISH}});
        }
    }
}
