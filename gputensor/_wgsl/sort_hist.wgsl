// Radix sort, step 1 of a pass: the digit histogram of every tile (see _backend/ops_sort.py).
//
// Workgroup (row r, tile t) counts the digits (key >> shift) & 255 of the TILE = WG * ITEMS
// elements [t * TILE, t * TILE + TILE) of row r into workgroup counters and writes count (d)
// to hist[hist_base + r * 256 * ntiles + d * ntiles + t]: digit-major, so one inclusive scan of
// each row's 256 * ntiles counts gives every (digit, tile) its first output position.
// Elements are read striped (coalesced); an invocation adds runs of equal digits at once, so
// sorted or constant input does not serialise on one counter.
//
// Keys come from the source dtype (SRC_KEYS = false: first pass, bits mapped by to_key) or from
// a key buffer of KW words per element (later passes). Index arithmetic is u32 and wraps, so
// bases may be "negative" (the first element of a chunk's binding minus the chunk's start).
//#include common
//#include sort_keys
//#include sort_source

const WG: u32 = 256u;
const ITEMS: u32 = {{ITEMS}}u;
const TILE: u32 = WG * ITEMS;
const SRC_KEYS: bool = {{SRC_KEYS}};

struct Params {
    rows: u32,       // rows of this dispatch
    n: u32,          // row length
    ntiles: u32,     // tiles of a whole row
    tile0: u32,      // first tile of this dispatch
    ntd: u32,        // tiles per row of this dispatch
    src_base: u32,   // binding element of (row 0, column 0) of the source
    src_ld: u32,     // source row stride (elements)
    hist_base: u32,  // binding element of hist (row 0, digit 0, tile 0)
    shift: u32,      // first bit of this pass's digit
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> hist: array<u32>;

var<workgroup> bins: array<atomic<u32>, 256>;

{{SRC_LOADER}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (g >= params.rows * params.ntd) {
        return;
    }
    let r = g / params.ntd;
    let t = params.tile0 + g % params.ntd;
    atomicStore(&bins[lid], 0u);
    workgroupBarrier();
    let start = t * TILE;
    let count = min(TILE, params.n - start);
    let base = params.src_base + r * params.src_ld + start;
    var cur = 0xFFFFFFFFu;
    var run = 0u;
    //#unroll
    for (var k = 0u; k < ITEMS; k++) {
        let i = k * WG + lid;
        if (i < count) {
            let d = digit(load_key(base + i), params.shift);
            if (d != cur) {
                if (run != 0u) {
                    atomicAdd(&bins[cur], run);
                }
                cur = d;
                run = 0u;
            }
            run += 1u;
        }
    }
    if (run != 0u) {
        atomicAdd(&bins[cur], run);
    }
    workgroupBarrier();
    hist[params.hist_base + r * 256u * params.ntiles + lid * params.ntiles + t] = atomicLoad(&bins[lid]);
}
