// Stream compaction, step 1 (see _backend/ops_compact.py): count the flagged elements of every
// tile of TILE = 256 * ITEMS elements into counts[count_first + tile]. Step 2 is an inclusive
// scan of the counts (ops_scan), step 3 compact_write.wgsl.
// Flags (flag(i), from ops_compact.py): NONZERO -- element i of a dtype array is not zero (raw
// bits, so -0.0 is zero and NaN is not); HEAD -- sorted key i differs from key i - 1 (or
// i == 0, or a NaN key when NaNs are distinct): the first element of each group of equal keys.
//#include common
//#include sort_keys

const WG: u32 = 256u;
const ITEMS: u32 = {{ITEMS}}u;
const TILE: u32 = WG * ITEMS;

struct Params {
    n: u32,            // elements of this dispatch
    src_first: u32,    // binding element of the dispatch's element 0
    g0: u32,           // global index of the dispatch's element 0
    count_first: u32,  // binding element of the dispatch's first tile count
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> counts: array<u32>;

var<workgroup> total: atomic<u32>;

{{FLAG_FN}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_group(wid, nwg);
    if (t * TILE >= params.n) {
        return;
    }
    if (lid == 0u) {
        atomicStore(&total, 0u);
    }
    workgroupBarrier();
    let count = min(TILE, params.n - t * TILE);
    var c = 0u;
    for (var k = 0u; k < ITEMS; k++) {
        let i = k * WG + lid;
        if (i < count && flag(t * TILE + i)) {
            c += 1u;
        }
    }
    if (c != 0u) {
        atomicAdd(&total, c);
    }
    workgroupBarrier();
    if (lid == 0u) {
        counts[params.count_first + t] = atomicLoad(&total);
    }
}
