// unique, last step (see _backend/ops_counting.py): group j of the sorted keys starts at sorted
// position starts[j] and ends at starts[j + 1] (n for the last group). Writes the group's
// count (HAS_COUNTS) and the source index of its first element, perm[starts[j]] (HAS_INDEX:
// the stable sort makes it the first occurrence), as IDX_WORDS-word integers. A permutation
// larger than one binding is bound window by window: a dispatch writes the index only when
// the group's start lies in its window [perm_lo, perm_hi) (counts are written by the first).
//#include common

const HAS_COUNTS: bool = {{HAS_COUNTS}};
const HAS_INDEX: bool = {{HAS_INDEX}};
const IDX_WORDS: u32 = {{IDX_WORDS}}u;

struct Params {
    m: u32,             // groups of this dispatch
    j0: u32,            // global index of the dispatch's first group
    total: u32,         // groups in all
    n: u32,             // sorted elements
    starts_first: u32,  // binding element of starts[j0]
    counts_first: u32,  // binding element of counts[j0]
    index_first: u32,   // binding element of index[j0]
    perm_first: u32,    // binding element of perm[0] (wrapping)
    perm_lo: u32,       // sorted positions [perm_lo, perm_hi) are in this dispatch's perm binding
    perm_hi: u32,
    write_counts: u32,  // 1: write the counts in this dispatch
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> starts: array<u32>;
@group(0) @binding(2) var<storage, read> perm: array<u32>;
@group(0) @binding(3) var<storage, read_write> counts: array<u32>;
@group(0) @binding(4) var<storage, read_write> index: array<u32>;

fn put(j: u32, v: u32, is_index: bool) {
    if (is_index) {
        let o = params.index_first + j;
        if (IDX_WORDS == 2u) {
            index[2u * o] = v;
            index[2u * o + 1u] = 0u;
        } else {
            index[o] = v;
        }
    } else {
        let o = params.counts_first + j;
        if (IDX_WORDS == 2u) {
            counts[2u * o] = v;
            counts[2u * o + 1u] = 0u;
        } else {
            counts[o] = v;
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let j = linear_group(wid, nwg) * 256u + lid;
    if (j >= params.m) {
        return;
    }
    let s = starts[params.starts_first + j];
    if (HAS_COUNTS && params.write_counts != 0u) {
        var e = params.n;
        if (params.j0 + j + 1u < params.total) {
            e = starts[params.starts_first + j + 1u];
        }
        put(j, e - s, false);
    }
    if (HAS_INDEX && s >= params.perm_lo && s < params.perm_hi) {
        put(j, perm[params.perm_first + s], true);
    }
}
