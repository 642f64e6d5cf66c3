// nonzero of an N-d array (see _backend/ops_gather.py): coordinate d of flat (row-major) index
// flat[j] is (flat[j] / stride) % size; written as IDX_WORDS-word integers (one dispatch per
// dimension).
//#include common

const IDX_WORDS: u32 = {{IDX_WORDS}}u;

struct Params {
    m: u32,           // indices of this dispatch
    flat_first: u32,  // binding element of the dispatch's first flat index
    out_first: u32,   // binding element of the dispatch's first output
    stride: u32,      // elements per step of this dimension
    size: u32,        // length of this dimension
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> flat: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let j = linear_group(wid, nwg) * 256u + lid;
    if (j >= params.m) {
        return;
    }
    let c = (flat[params.flat_first + j] / params.stride) % params.size;
    let o = params.out_first + j;
    if (IDX_WORDS == 2u) {
        out[2u * o] = c;
        out[2u * o + 1u] = 0u;
    } else {
        out[o] = c;
    }
}
