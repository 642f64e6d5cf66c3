// Inclusive scan (cumulative sum / product) along contiguous rows, in place, one BLOCK of a row per
// workgroup (see _backend/ops_scan.py for the three-phase hierarchy that joins the blocks).
//   PHASE 0: scan each block in workgroup memory (WG invocations x ITEMS elements: coalesced load,
//            per-invocation serial scan of ITEMS consecutive elements, Hillis-Steele scan of the WG
//            partial results, coalesced store); with WRITE_TOTALS, store the block's total in aux.
//   PHASE 1: combine every element of block b >= 1 with the (already scanned) total of block b-1.
// Dispatch unit: rows [0, rows) x blocks [b0, b0 + nbk) of the window; data element (r, column c)
// lies at data_first + r * ld + (c - b0 * BLOCK); aux element (r, j) at aux_first + r * aux_ld + j
// (j counted from the dispatch's first block; in PHASE 1 aux_first points at block b0 - 1).
{{ENABLE}}
//#include common

struct Params {
    rows: u32,
    n: u32,
    ld: u32,
    b0: u32,
    nbk: u32,
    data_first: u32,
    aux_first: u32,
    aux_ld: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> data: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> aux: array<{{T}}>;

const PHASE: u32 = {{PHASE}}u;
const WRITE_TOTALS: bool = {{WRITE_TOTALS}};
const WG: u32 = {{WG}}u;
const ITEMS: u32 = {{ITEMS}}u;
const BLOCK: u32 = WG * ITEMS;

var<workgroup> tile: array<{{T}}, BLOCK>;
var<workgroup> part: array<{{T}}, WG>;

fn identity() -> {{T}} {
    return {{IDENTITY}};
}

fn combine(a: {{T}}, b: {{T}}) -> {{T}} {
    return {{COMBINE}};
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (g >= params.rows * params.nbk) {
        return;
    }
    let r = g / params.nbk;
    let bl = g % params.nbk;
    let col0 = (params.b0 + bl) * BLOCK;
    let base = params.data_first + r * params.ld + bl * BLOCK;
    let count = min(BLOCK, params.n - col0);

    if (PHASE == 1u) {
        let carry = aux[params.aux_first + r * params.aux_ld + bl];
        for (var i = lid; i < count; i += WG) {
            data[base + i] = combine(carry, data[base + i]);
        }
        return;
    }

    for (var e = 0u; e < ITEMS; e++) {
        let i = e * WG + lid;
        var v = identity();
        if (i < count) {
            v = data[base + i];
        }
        tile[i] = v;
    }
    workgroupBarrier();
    var acc = identity();
    for (var e = 0u; e < ITEMS; e++) {
        acc = combine(acc, tile[lid * ITEMS + e]);
        tile[lid * ITEMS + e] = acc;
    }
    part[lid] = acc;
    workgroupBarrier();
    for (var off = 1u; off < WG; off = off << 1u) {
        var v = part[lid];
        if (lid >= off) {
            v = combine(part[lid - off], v);
        }
        workgroupBarrier();
        part[lid] = v;
        workgroupBarrier();
    }
    var prefix = identity();
    if (lid > 0u) {
        prefix = part[lid - 1u];
    }
    for (var e = 0u; e < ITEMS; e++) {
        tile[lid * ITEMS + e] = combine(prefix, tile[lid * ITEMS + e]);
    }
    workgroupBarrier();
    for (var e = 0u; e < ITEMS; e++) {
        let i = e * WG + lid;
        if (i < count) {
            data[base + i] = tile[i];
        }
    }
    if (WRITE_TOTALS && lid == 0u) {
        aux[params.aux_first + r * params.aux_ld + bl] = part[WG - 1u];
    }
}
