// searchsorted: one invocation per query binary-searches the ascending array `a` on canonical
// sort keys (sort_keys.wgsl: NaN above +inf, -0.0 == +0.0, as NumPy orders them), counting the
// elements < query (RIGHT = false) or <= query (RIGHT = true). With `accumulate` the count is
// added to the output (a sorted array larger than one binding is searched chunk by chunk).
// Output: IDX_WORDS u32 words per index (int32 / int64, little-endian; counts are < 2^31).
//#include common
//#include sort_keys

const RIGHT: bool = {{RIGHT}};
const IDX_WORDS: u32 = {{IDX_WORDS}}u;

struct Params {
    m: u32,          // queries of this dispatch
    n: u32,          // sorted elements of this dispatch's chunk
    a_first: u32,    // binding element of a[0]
    q_first: u32,    // binding element of the first query
    o_first: u32,    // binding element of the first output
    accumulate: u32, // 1: add to the output
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> q: array<u32>;
@group(0) @binding(3) var<storage, read_write> o: array<u32>;

{{A_LOADER}}

{{Q_LOADER}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let j = linear_group(wid, nwg) * 256u + lid;
    if (j >= params.m) {
        return;
    }
    let key = to_key(q_bits(params.q_first + j));
    var lo = 0u;
    var hi = params.n;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        let km = to_key(a_bits(params.a_first + mid));
        var go_right = key_less(km, key);
        if (RIGHT) {
            go_right = !key_less(key, km);
        }
        if (go_right) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let at = params.o_first + j;
    if (IDX_WORDS == 2u) {
        var total = lo;
        if (params.accumulate != 0u) {
            total += o[2u * at];
        }
        o[2u * at] = total;
        o[2u * at + 1u] = 0u;
    } else {
        var total = lo;
        if (params.accumulate != 0u) {
            total += o[at];
        }
        o[at] = total;
    }
}
