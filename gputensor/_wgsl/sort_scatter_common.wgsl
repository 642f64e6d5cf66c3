// Radix sort, step 3 of a pass: what the two scatter kernels share (see _backend/ops_sort.py;
// step 2 is an inclusive scan of the histograms of step 1). The kernels differ only in how they
// rank the tile by the digit: sort_scatter.wgsl with two stable 4-bit counting sorts,
// sort_scatter_sg.wgsl with subgroup ballots ("warp match").
//
// Workgroup (row r, tile t), WG = 256 invocations, holds the TILE = WG * ITEMS elements
// [t * TILE, t * TILE + TILE) of row r (tile_of):
//   1. load keys (and values) into registers (load_elem, at tile positions the kernel picks);
//      positions past the row end get MAXKEY, which has digit 255 and sorts after every real
//      element (they come last in input order);
//   2. (per kernel) stable sort of the tile by the digit into workgroup memory (put_elem: keys
//      at smem[tp(p)] (+ TPAD for a key's high word), values at VAL_OFF + tp(p)), and lstart[d]
//      set to the first position of digit d in the sorted tile;
//   3. gstart[d] = the tile's global start of digit d, read from the scanned histogram (entry
//      before (d, t), load_gstart), then write_tile writes element p of the sorted tile to
//      gstart[d] + p - lstart[d]: striped, so a run of one digit writes consecutively.
//
// write_out (generated per output mode by sort_key_code._write_out):
//   mode 0: keys (KW words) and values (u32) to the destination key / value buffers;
//   mode 1: from_key(key) to the output dtype (packed dtypes through atomicOr into the
//           zero-filled output, 64-bit as two words);
//   mode 2: the value (the source column) as an int32 / int64 index.
// Element e = r * n + position of the dispatch's rows is written at dst_base + e (dval_base + e
// for values) when dlo <= e < dhi: a destination larger than one binding is written by one
// dispatch per destination window. u32 arithmetic wraps, so bases may be "negative".
//#include common
//#include sort_keys
//#include sort_source

const WG: u32 = 256u;
const ITEMS: u32 = {{ITEMS}}u;
const TILE: u32 = WG * ITEMS;
const SRC_KEYS: bool = {{SRC_KEYS}};
const HAS_VALS: bool = {{HAS_VALS}};
// padded tile index (one spare word per 32), so that strided tile accesses avoid bank conflicts
const TPAD: u32 = TILE + TILE / 32u;
const VAL_OFF: u32 = TPAD * KW;            // values follow the keys in the tile
const SMEM: u32 = {{SMEM}}u;               // >= TPAD * (KW + HAS_VALS); the kernel may need more

struct Params {
    rows: u32,       // rows of this dispatch
    n: u32,          // row length
    ntiles: u32,     // tiles of a whole row
    tile0: u32,      // first tile of this dispatch
    ntd: u32,        // tiles per row of this dispatch
    src_base: u32,   // binding element of (row 0, column 0) of the source keys
    src_ld: u32,     // source row stride (elements)
    sval_base: u32,  // binding element of (row 0, column 0) of the source values (SRC_KEYS)
    hist_base: u32,  // binding element of hist (row 0, digit 0, tile 0)
    shift: u32,      // first bit of this pass's digit
    dst_base: u32,   // binding element of destination element e = 0
    dval_base: u32,  // binding element of destination value e = 0 (OUT_MODE 0)
    dlo: u32,        // destination elements [dlo, dhi) are in this dispatch's binding
    dhi: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> sval: array<u32>;
@group(0) @binding(3) var<storage, read> hist: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<{{DST_ARRAY}}>;
@group(0) @binding(5) var<storage, read_write> dval: array<u32>;

var<workgroup> smem: array<u32, SMEM>;
var<workgroup> lstart: array<u32, 256>;
var<workgroup> gstart: array<u32, 256>;

{{SRC_LOADER}}

// write_out(e, key, value): store element e of the destination (OUT_MODE, from ops_sort.py)
{{WRITE_OUT}}

// the workgroup's tile: row r of the dispatch, tile t of the row, its first element and length,
// and the binding elements of its first key and value
struct Tile {
    r: u32,
    t: u32,
    start: u32,
    count: u32,
    base: u32,
    vbase: u32,
}

// key and value of one element
struct Elem {
    k: vec2<u32>,
    v: u32,
}

// the tile of linear workgroup g < rows * ntd
fn tile_of(g: u32) -> Tile {
    let r = g / params.ntd;
    let t = params.tile0 + g % params.ntd;
    let start = t * TILE;
    return Tile(r, t, start, min(TILE, params.n - start), params.src_base + r * params.src_ld + start,
                params.sval_base + r * params.src_ld + start);
}

fn tp(p: u32) -> u32 {
    return p + (p >> 5u);
}

// element at tile position p: from the source (the value is the source's, or the column when
// the first pass starts the values), or the padding (MAXKEY, 0) past the row end
fn load_elem(tl: Tile, p: u32) -> Elem {
    var e = Elem(MAXKEY, 0u);
    if (p < tl.count) {
        e.k = load_key(tl.base + p);
        if (HAS_VALS) {
            if (SRC_KEYS) {
                e.v = sval[tl.vbase + p];
            } else {
                e.v = tl.start + p;
            }
        }
    }
    return e;
}

fn tile_key(p: u32) -> vec2<u32> {
    if (KW == 2u) {
        return vec2<u32>(smem[tp(p)], smem[TPAD + tp(p)]);
    }
    return vec2<u32>(smem[tp(p)], 0u);
}

// store the element at position p of the sorted tile in workgroup memory
fn put_elem(p: u32, k: vec2<u32>, v: u32) {
    smem[tp(p)] = k.x;
    if (KW == 2u) {
        smem[TPAD + tp(p)] = k.y;
    }
    if (HAS_VALS) {
        smem[VAL_OFF + tp(p)] = v;
    }
}

// gstart[lid] = where the tile's elements of digit lid start in the row (invocation lid)
fn load_gstart(tl: Tile, lid: u32) {
    let flat = lid * params.ntiles + tl.t;
    var gs = 0u;
    if (flat > 0u) {
        gs = hist[params.hist_base + tl.r * 256u * params.ntiles + flat - 1u];
    }
    gstart[lid] = gs;
}

// step 3: the striped write of the sorted tile (after a barrier that publishes the tile,
// lstart and gstart)
fn write_tile(tl: Tile, lid: u32) {
    //#unroll
    for (var j = 0u; j < ITEMS; j++) {
        let p = j * WG + lid;
        if (p < tl.count) {
            let k = tile_key(p);
            let d = digit(k, params.shift);
            let e = tl.r * params.n + gstart[d] + p - lstart[d];
            if (e >= params.dlo && e < params.dhi) {
                var v = 0u;
                if (HAS_VALS) {
                    v = smem[VAL_OFF + tp(p)];
                }
                write_out(e, k, v);
            }
        }
    }
}
