// Smallest and largest canonical key (sort_keys' to_key: order-preserving u32 bits of an
// integer or bool of at most 32 bits) of n contiguous elements, in one dispatch
// (ops_counting.key_range; unique_values by counting reads the two words back to size its
// histogram). Every workgroup reduces its tile in workgroup memory, then adds its result with
// integer atomicMax: out[0] gets the largest ~key (the complement of the smallest key),
// out[1] the largest key; both start at 0. Integer max is order-independent: the result does
// not depend on which workgroup finishes first.
//#include common
//#include sort_keys

const WG: u32 = 256u;
const ITEMS: u32 = {{ITEMS}}u;

struct Params {
    n: u32,          // elements of this dispatch
    src_first: u32,  // binding element of the dispatch's element 0
    out_first: u32,  // binding element of out[0]
    pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;

{{SRC_LOADER}}

var<workgroup> part: array<vec2<u32>, WG>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let base = linear_group(wid, nwg) * WG * ITEMS;
    var r = vec2<u32>(0u, 0u);  // (max ~key, max key) of this invocation's elements
    //#unroll
    for (var j = 0u; j < ITEMS; j++) {
        let i = base + j * WG + lid;
        if (i < params.n) {
            let k = to_key(src_bits(params.src_first + i)).x;
            r = max(r, vec2<u32>(~k, k));
        }
    }
    part[lid] = r;
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        workgroupBarrier();
        if (lid < s) {
            part[lid] = max(part[lid], part[lid + s]);
        }
    }
    // Same-address atomics serialise: a workgroup whose result cannot raise a word (it only
    // grows) skips its atomic, so after the first few workgroups most add nothing.
    if (lid == 0u && base < params.n) {
        if (part[0].x > atomicLoad(&out[params.out_first])) {
            atomicMax(&out[params.out_first], part[0].x);
        }
        if (part[0].y > atomicLoad(&out[params.out_first + 1u])) {
            atomicMax(&out[params.out_first + 1u], part[0].y);
        }
    }
}
