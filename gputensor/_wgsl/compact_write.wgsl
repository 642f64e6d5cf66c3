// Stream compaction, step 3 (see compact_count.wgsl): every tile ranks its flagged elements in
// input order (blocked arrangement, exclusive workgroup scan of the per-invocation counts) and
// writes element i's output at rank base(tile) + local rank, base(tile) being the inclusive
// scan of the counts at tile - 1. Outputs (from ops_compact.py):
//   write_flagged(r, i): for flagged elements (rank r): the global index i (one or two words),
//                        one coordinate of it (dimension value_base), its value in a source
//                        array bound in perm's place (x[mask]), the value of the sorted key
//                        (unique of integer dtypes), or the value value_base + i of a
//                        histogram bucket (unique by counting);
//   write_all(g, i):     for every element, g = groups up to and including i, minus one (the
//                        group id: unique's inverse, scattered through the permutation).
// Staged outputs (one u32 word per flagged element: 4-byte values, indices, coordinates) are
// first put in workgroup memory at their rank within the tile (stage[r - tile_base]), then
// finish_tile writes the tile's words to out with consecutive invocations on consecutive
// elements (coalesced); other outputs are written where write_flagged stores them.
// Output bases wrap (u32), so they may be "negative" relative to the binding.
//#include common
//#include sort_keys

const WG: u32 = 256u;
const ITEMS: u32 = {{ITEMS}}u;
const TILE: u32 = WG * ITEMS;

struct Params {
    n: u32,            // elements of this dispatch
    src_first: u32,    // binding element of the dispatch's element 0
    g0: u32,           // global index of the dispatch's element 0
    count_first: u32,  // binding element of the scanned count of the dispatch's first tile
    out_base: u32,     // binding element of output rank 0
    perm_first: u32,   // binding element of perm at the dispatch's element 0
    inv_base: u32,     // binding element of inverse entry 0
    inv_lo: u32,       // inverse entries [inv_lo, inv_hi) lie in this dispatch's binding
    inv_hi: u32,
    first_tile: u32,   // 1: the dispatch's first tile is the global first (base 0)
    value_base: u32,   // bits of the value of global element 0 (bucket values; else 0)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> counts: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<{{OUT_ARRAY}}>;
@group(0) @binding(4) var<storage, read> perm: array<u32>;
@group(0) @binding(5) var<storage, read_write> inv: array<u32>;

var<workgroup> part: array<u32, WG>;
var<workgroup> stage: array<u32, {{STAGE}}>;
var<private> tile_base: u32;  // output rank of the tile's first flagged element

{{FLAG_FN}}

{{WRITE_FNS}}

{{FINISH_FN}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = linear_group(wid, nwg);
    if (t * TILE >= params.n) {
        return;
    }
    let count = min(TILE, params.n - t * TILE);
    var flags = 0u;
    var c = 0u;
    for (var j = 0u; j < ITEMS; j++) {
        let p = lid * ITEMS + j;
        if (p < count && flag(t * TILE + p)) {
            flags |= 1u << j;
            c += 1u;
        }
    }
    part[lid] = c;
    workgroupBarrier();
    for (var off = 1u; off < WG; off = off << 1u) {
        var v = part[lid];
        if (lid >= off) {
            v += part[lid - off];
        }
        workgroupBarrier();
        part[lid] = v;
        workgroupBarrier();
    }
    var base = 0u;
    if (t > 0u || params.first_tile == 0u) {
        base = counts[params.count_first + t - 1u];
    }
    tile_base = base;
    var r = base + part[lid] - c;
    for (var j = 0u; j < ITEMS; j++) {
        let p = lid * ITEMS + j;
        if (p < count) {
            let i = t * TILE + p;
            if ((flags & (1u << j)) != 0u) {
                write_flagged(r, i);
                r += 1u;
            }
            write_all(r - 1u, i);
        }
    }
    workgroupBarrier();
    finish_tile(base, part[WG - 1u], lid);
}
