// Radix sort, step 3 of a pass: stable scatter of every tile by its 8-bit digit (see
// _backend/ops_sort.py; step 2 is an inclusive scan of the histograms of step 1).
//
// Workgroup (row r, tile t), WG = 256 invocations x ITEMS elements in a blocked arrangement
// (invocation l holds tile positions l * ITEMS .. l * ITEMS + ITEMS - 1, in order):
//   1. load keys (and values) into registers; positions past the row end get MAXKEY, which has
//      digit 255 and sorts after every real element (they come last in input order);
//   2. sort the tile by the digit in workgroup memory with two stable 4-bit counting sorts (low
//      nibble, then high nibble). Each is deterministic: a 16 x WG matrix of per-invocation
//      nibble counts (nibble-major) is scanned exclusively, which ranks every element after all
//      elements of smaller nibbles and after the equal-nibble elements of earlier invocations
//      and of its own earlier items -- i.e. in input order, so the sort is stable;
//   3. find where each digit starts in the sorted tile, read the tile's global start of each
//      digit from the scanned histogram (entry before (d, t)), and write element p of the tile
//      to start[d] + p - local_start[d]: striped, so a run of one digit writes consecutively.
// The counting matrix shares workgroup memory with the tile (the elements are in registers
// while it is used).
//
// write_out (generated per output mode by ops_sort._write_out):
//   mode 0: keys (KW words) and values (u32) to the destination key / value buffers;
//   mode 1: from_key(key) to the output dtype (packed dtypes through atomicOr into the
//           zero-filled output, 64-bit as two words);
//   mode 2: the value (the source column) as an int32 / int64 index.
// Element e = r * n + position of the dispatch's rows is written at dst_base + e (dval_base + e
// for values) when dlo <= e < dhi: a destination larger than one binding is written by one
// dispatch per destination window. u32 arithmetic wraps, so bases may be "negative".
//#include common
//#include sort_keys

const WG: u32 = 256u;
const ITEMS: u32 = {{ITEMS}}u;
const TILE: u32 = WG * ITEMS;
const SRC_KEYS: bool = {{SRC_KEYS}};
const HAS_VALS: bool = {{HAS_VALS}};
// padded tile index (one spare word per 32) and padded count-matrix index (one per 16), so that
// the blocked (stride ITEMS) and the per-invocation (stride 16) accesses avoid bank conflicts
const TPAD: u32 = TILE + TILE / 32u;
const VAL_OFF: u32 = TPAD * KW;            // values follow the keys in the tile
const SMEM: u32 = {{SMEM}}u;               // max(TPAD * (KW + HAS_VALS), 16 * WG + WG)

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
@group(0) @binding(1) var<storage, read_write> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> sval: array<u32>;
@group(0) @binding(3) var<storage, read_write> hist: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<{{DST_ARRAY}}>;
@group(0) @binding(5) var<storage, read_write> dval: array<u32>;

var<workgroup> smem: array<u32, SMEM>;
var<workgroup> part: array<u32, WG>;
var<workgroup> lstart: array<u32, 256>;
var<workgroup> gstart: array<u32, 256>;

{{SRC_LOADER}}

// write_out(e, key, value): store element e of the destination (OUT_MODE, from ops_sort.py)
{{WRITE_OUT}}

fn tp(p: u32) -> u32 {
    return p + (p >> 5u);
}

fn cp(q: u32) -> u32 {
    return q + (q >> 4u);
}

fn load_key(i: u32) -> vec2<u32> {
    if (SRC_KEYS) {
        if (KW == 2u) {
            return vec2<u32>(src[2u * i], src[2u * i + 1u]);
        }
        return vec2<u32>(src[i], 0u);
    }
    return to_key(src_bits(i));
}

fn tile_key(p: u32) -> vec2<u32> {
    if (KW == 2u) {
        return vec2<u32>(smem[tp(p)], smem[TPAD + tp(p)]);
    }
    return vec2<u32>(smem[tp(p)], 0u);
}

fn put_tile_key(p: u32, k: vec2<u32>) {
    smem[tp(p)] = k.x;
    if (KW == 2u) {
        smem[TPAD + tp(p)] = k.y;
    }
}

// exclusive scan of part[0..WG) in place; returns the total (all invocations call it)
fn scan_part(lid: u32) -> u32 {
    for (var off = 1u; off < WG; off = off << 1u) {
        var v = part[lid];
        if (lid >= off) {
            v += part[lid - off];
        }
        workgroupBarrier();
        part[lid] = v;
        workgroupBarrier();
    }
    return part[WG - 1u];
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (g >= params.rows * params.ntd) {
        return;
    }
    let r = g / params.ntd;
    let t = params.tile0 + g % params.ntd;
    let start = t * TILE;
    let count = min(TILE, params.n - start);
    let base = params.src_base + r * params.src_ld + start;
    let vbase = params.sval_base + r * params.src_ld + start;

    // 1. blocked load
    var keys: array<vec2<u32>, ITEMS>;
    var vals: array<u32, ITEMS>;
    for (var j = 0u; j < ITEMS; j++) {
        let p = lid * ITEMS + j;
        var k = MAXKEY;
        var v = 0u;
        if (p < count) {
            k = load_key(base + p);
            if (HAS_VALS) {
                if (SRC_KEYS) {
                    v = sval[vbase + p];
                } else {
                    v = start + p;
                }
            }
        }
        keys[j] = k;
        vals[j] = v;
    }

    // 2. two stable 4-bit counting sorts in workgroup memory
    for (var step = 0u; step < 2u; step++) {
        let nshift = params.shift + 4u * step;
        for (var d = 0u; d < 16u; d++) {
            smem[cp(d * WG + lid)] = 0u;
        }
        for (var j = 0u; j < ITEMS; j++) {
            let nib = digit(keys[j], nshift) & 15u;
            smem[cp(nib * WG + lid)] += 1u;
        }
        workgroupBarrier();
        // exclusive scan of the 16 x WG matrix (nibble-major): invocation l owns 16 entries
        var s = 0u;
        for (var e = 0u; e < 16u; e++) {
            s += smem[cp(lid * 16u + e)];
        }
        part[lid] = s;
        workgroupBarrier();
        scan_part(lid);
        var pre = 0u;
        if (lid > 0u) {
            pre = part[lid - 1u];
        }
        for (var e = 0u; e < 16u; e++) {
            let c = smem[cp(lid * 16u + e)];
            smem[cp(lid * 16u + e)] = pre;
            pre += c;
        }
        workgroupBarrier();
        var pos: array<u32, ITEMS>;
        for (var j = 0u; j < ITEMS; j++) {
            let nib = digit(keys[j], nshift) & 15u;
            let q = cp(nib * WG + lid);
            pos[j] = smem[q];
            smem[q] = pos[j] + 1u;
        }
        workgroupBarrier();
        for (var j = 0u; j < ITEMS; j++) {
            put_tile_key(pos[j], keys[j]);
            if (HAS_VALS) {
                smem[VAL_OFF + tp(pos[j])] = vals[j];
            }
        }
        workgroupBarrier();
        if (step == 0u) {
            for (var j = 0u; j < ITEMS; j++) {
                let p = lid * ITEMS + j;
                keys[j] = tile_key(p);
                if (HAS_VALS) {
                    vals[j] = smem[VAL_OFF + tp(p)];
                }
            }
            workgroupBarrier();
        }
    }

    // 3. digit starts (local and global), then the striped scatter
    for (var j = 0u; j < ITEMS; j++) {
        let p = j * WG + lid;
        let d = digit(tile_key(p), params.shift);
        if (p == 0u || digit(tile_key(p - 1u), params.shift) != d) {
            lstart[d] = p;
        }
    }
    let flat = lid * params.ntiles + t;
    var gs = 0u;
    if (flat > 0u) {
        gs = hist[params.hist_base + r * 256u * params.ntiles + flat - 1u];
    }
    gstart[lid] = gs;
    workgroupBarrier();
    for (var j = 0u; j < ITEMS; j++) {
        let p = j * WG + lid;
        if (p < count) {
            let k = tile_key(p);
            let d = digit(k, params.shift);
            let e = r * params.n + gstart[d] + p - lstart[d];
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
