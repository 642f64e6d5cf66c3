// Histogram of small-range integer values (unique_values / unique_counts by counting, see
// _backend/ops_counting.py count_values): every element's canonical key (sort_keys: the bits of
// an integer or bool mapped to an order-preserving u32) minus the key of the smallest value is
// its bucket, and the bucket's counter is incremented atomically. The caller knows the range:
// every bucket index is < the histogram's length. Integer atomics: the counts are exact and do
// not depend on the order of the additions.
//
// The smallest key comes from the parameters, or (RANGE_MIN) from the first word of `range`
// as key_range.wgsl leaves it (its complement): then the range is not known on the host when
// this is recorded, and values whose bucket is not below `capacity` are not counted (the
// caller reads the range back with the counts and discards them if the range did not fit).
//
// Same-bucket atomics from many invocations serialise, so with subgroups (PEEL > 0) each
// subgroup first merges equal buckets: up to PEEL times, the lowest lane still pending names
// its bucket, every pending lane with that bucket joins, and one atomicAdd adds them all;
// lanes still pending after PEEL rounds add one each. PEEL = the subgroup size (every lane is
// merged) for small ranges, where a subgroup holds few distinct buckets; 1 for wide ranges,
// which only tames one heavily repeated value. All subgroup operations run in control flow
// uniform in the subgroup (every lane takes part in every round).
//#include common
//#include sort_keys
//#include subgroup_masks

const WG: u32 = 256u;
const ITEMS: u32 = {{ITEMS}}u;
const PEEL: u32 = {{PEEL}}u;  // 0: no subgroup operations
const RANGE_MIN: bool = {{RANGE_MIN}};

struct Params {
    n: u32,            // elements of this dispatch
    src_first: u32,    // binding element of the dispatch's element 0
    hist_first: u32,   // binding element of bucket 0
    capacity: u32,     // buckets
    range_first: u32,  // binding element of key_range's (max ~key, max key) (RANGE_MIN)
    key_min: u32,      // key of the smallest value (bucket 0), unless RANGE_MIN
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> hist: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read> range: array<u32>;

{{SRC_LOADER}}

{{ADD_FN}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32{{SG_ARGS}}) {
    let base = linear_group(wid, nwg) * WG * ITEMS;
    var key_min = params.key_min;
    if (RANGE_MIN) {
        key_min = ~range[params.range_first];
    }
    //#unroll
    for (var j = 0u; j < ITEMS; j++) {
        let i = base + j * WG + lid;
        var live = i < params.n;
        var bucket = 0u;
        if (live) {
            bucket = to_key(src_bits(params.src_first + i)).x - key_min;
            live = bucket < params.capacity;
        }
        add(live, bucket{{SG_CALL}});
    }
}
