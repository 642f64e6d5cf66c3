// Reductions whose state is one accumulator value: sum, prod, max, min, mean, all, any.
// `combine` is the op's associative combine; `finish` its post-map (mean divides by count),
// converted to the destination type. See reduce_common.wgsl for the work partitioning.
//
// Vector path (VEC, a first pass over a source whose reduced range is one dim of stride 1, of an
// unpacked 4- or 8-byte dtype): the source is bound a second time as `srcv`, an array of VW-lane
// vectors (16 bytes) starting at the same aligned byte offset, so vector v holds elements
// [v * VW, v * VW + VW) of `src`. A chunk's elements [e0, e1) of the binding split into a head
// (before the first whole vector), whole vectors and a tail, at most VW - 1 elements each, read
// as scalars from `src`; invocation y reads vectors y, y + TY, ... (VU of them in flight), into
// one accumulator per lane. The order of combination is fixed by the shapes and by the element
// offset of the source modulo VW, so results are bitwise reproducible.

//#include reduce_common

const VEC: bool = {{VEC}};
const VW: u32 = {{VW}}u;   // lanes of a vector load (16 bytes / item size)
const VU: u32 = {{VU}}u;   // vector loads in flight per invocation
const YS: u32 = select(TX, 1u, VEC);

var<workgroup> sh_v: array<{{SH}}, WG>;

fn combine(a: {{ACC}}, b: {{ACC}}) -> {{ACC}} {
    return {{COMBINE}};
}

fn finish(r: {{ACC}}) -> {{DST}} {
    return {{FINISH}};
}

// `srcv` and `load_vec(v)` (vector v of it) in the vector path; else a stub that only type-checks.
{{VEC_SRC}}

// Vector path: the combination of elements [e0, e1) of the source binding that invocation y of
// the chunk's TY takes (see the top of the file).
fn reduce_vec(e0: u32, e1: u32, y: u32) -> {{ACC}} {
    let v0 = (e0 + VW - 1u) / VW;   // first whole vector
    let v1 = e1 / VW;               // past the last whole vector
    let h = min(v0 * VW, e1);       // head: [e0, h)
    let t = max(v1 * VW, h);        // tail: [t, e1)
    var a: array<{{ACC}}, VW>;
    //#unroll
    for (var l = 0u; l < VW; l++) {
        a[l] = {{IDENTITY}};
    }
    for (var i = e0 + y; i < h; i += TY) {
        a[0] = combine(a[0], to_acc({{VEC_LOAD_SRC}}(i)));
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
                a[l] = {{VEC_COMBINE}}(a[l], to_acc(xs[u][l]));
            }
        }
    }
    for (; v < v1; v += TY) {
        let x = load_vec(v);
        //#unroll
        for (var l = 0u; l < VW; l++) {
            a[l] = {{VEC_COMBINE}}(a[l], to_acc(x[l]));
        }
    }
    for (var i = t + y; i < e1; i += TY) {
        a[VW - 1u] = combine(a[VW - 1u], to_acc({{VEC_LOAD_SRC}}(i)));
    }
    return {{VEC_FOLD}};
}

@compute @workgroup_size({{TX}} * {{TY}})
fn main(@builtin(local_invocation_index) li: u32,
        @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    // 1-D workgroup (SIMD lanes follow the linear index on every adapter), viewed as TX x TY:
    // x fastest, except in the vector path (y fastest: consecutive invocations read consecutive
    // vectors of one output); YS is the step of the linear index along y.
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

    var acc: {{ACC}} = {{IDENTITY}};
    if (kvalid) {
        var j = j0 + lid.y;
        if (IN_PARTIAL) {
            for (; j < j1; j += TY) {
                acc = combine(acc, load_partial(ko.x + j));
            }
        } else if (VEC) {
            let e0 = params.src_first + ko.x + j0;
            acc = reduce_vec(e0, e0 + (j1 - j0), lid.y);
        } else {
            let base = params.src_first + ko.x;
            // Four independent loads in flight per iteration, combined in index order.
            for (; j + 3u * TY < j1; j += 4u * TY) {
                let x0 = to_acc(load_src(base + red_offsets(j).x));
                let x1 = to_acc(load_src(base + red_offsets(j + TY).x));
                let x2 = to_acc(load_src(base + red_offsets(j + 2u * TY).x));
                let x3 = to_acc(load_src(base + red_offsets(j + 3u * TY).x));
                acc = combine(combine(combine(combine(acc, x0), x1), x2), x3);
            }
            for (; j < j1; j += TY) {
                acc = combine(acc, to_acc(load_src(base + red_offsets(j).x)));
            }
        }
    }

    // Tree over y in workgroup memory, in a fixed order.
    let me = li;
    if (TY > 1u) {
        sh_v[me] = to_sh(acc);
        for (var s = TY / 2u; s > 0u; s = s / 2u) {
            workgroupBarrier();
            if (lid.y < s) {
                acc = combine(acc, from_sh(sh_v[me + s * YS]));
                sh_v[me] = to_sh(acc);
            }
        }
    }

    if (lid.y == 0u && kvalid) {
        if (OUT_PARTIAL) {
            store_partial(k * params.slots + params.slot_base + chunk, acc);
        } else {
            store_dst(params.dst_first + ko.y, finish(acc));
        }
    }
}
