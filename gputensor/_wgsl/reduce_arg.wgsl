// argmax / argmin: the state is (value, reduced linear index). `better` is a total order (NaN
// first, then the larger (argmax) or smaller (argmin) value, ties to the smaller index), so the
// result is NumPy's first occurrence whatever the combination order. See reduce_common.wgsl.

//#include reduce_common

const IS_MAX: bool = {{IS_MAX}};

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
                let x = from_sh(sh_v[me + s * TX]);
                let xi = sh_i[me + s * TX];
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
