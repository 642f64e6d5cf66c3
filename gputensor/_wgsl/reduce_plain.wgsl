// Reductions whose state is one accumulator value: sum, prod, max, min, mean, all, any.
// `combine` is the op's associative combine; `finish` its post-map (mean divides by count),
// converted to the destination type. See reduce_common.wgsl for the work partitioning.

//#include reduce_common

var<workgroup> sh_v: array<{{SH}}, WG>;

fn combine(a: {{ACC}}, b: {{ACC}}) -> {{ACC}} {
    return {{COMBINE}};
}

fn finish(r: {{ACC}}) -> {{DST}} {
    return {{FINISH}};
}

@compute @workgroup_size({{TX}} * {{TY}})
fn main(@builtin(local_invocation_index) li: u32,
        @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    // 1-D workgroup (SIMD lanes follow the linear index on every adapter), viewed as TX x TY.
    let lid = vec2<u32>(li % TX, li / TX);
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
                acc = combine(acc, from_sh(sh_v[me + s * TX]));
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
