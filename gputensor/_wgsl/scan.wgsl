// Inclusive scan (cumulative sum / product) along one axis of a strided array, out of place or in
// place (see _backend/ops_scan.py for the reduce-then-scan hierarchy that joins the units).
//
// The axis of every row is cut into *units* of unit_len elements. A dispatch covers a box of
// rows (rows0 x rows1 x rows2, row (r0, r1, r2)) times the units [u0, u0 + units) of each row.
// Element x of unit j (axis position (u0 + j) * unit_len + x) of row (r0, r1, r2) lies at
//     src: src_first + r0*src_s0 + r1*src_s1 + r2*src_s2 + (j*unit_len + x)*src_as
// (dst likewise); the total of unit j at aux_first + r0*aux_s0 + r1*aux_s1 + r2*aux_s2 + j*aux_us.
// Strides are the u32 bits of signed element strides: u32 arithmetic wraps, so negative strides
// (and j - 1 = -1) land on the right element of the window.
//
//   PHASE 0 (reduce): write each unit's total (the combine of its elements) to aux.
//   PHASE 1 (scan):   scan each unit starting from the carry = aux of unit j - 1 (the host has
//                     scanned the totals in between; identity for the row's first unit, and
//                     for every unit when CARRY is false: single-unit rows) and store every
//                     element once, converted to dst's type.
//
//   MODE 0 (rows):    one workgroup per (row, unit), unit_len = BLOCK = WG * ITEMS: coalesced
//                     loads along the axis into workgroup memory, a serial scan of ITEMS
//                     consecutive elements per invocation, a Hillis-Steele scan of the WG
//                     partials, coalesced stores. For axes with a small stride. PHASE 0 runs
//                     with fewer invocations and more ITEMS each (same BLOCK) and a raking
//                     reduction.
//   MODE 1 (columns): one invocation per (row, unit), scanning its unit serially (eight loads
//                     issued at a time); consecutive invocations take consecutive r0 (the row
//                     dimension with the smallest dst stride), so every step of the loop is a
//                     coalesced load and store across the invocations. For short axes and axes
//                     with a large stride.
//
// Values are read from src's storage type (packed 8/16-bit included) and converted to acc_t
// ({{ACC}}) on load (LOAD_SRC), combined in acc_t, converted to dst's type on store
// (STORE_DST: a plain store, or atomicAnd/atomicOr of the element's lane for packed dst types, so
// elements of different rows sharing a u32 word never race).
//#include common

alias acc_t = {{ACC}};

struct Params {
    n: u32,
    units: u32,
    u0: u32,
    unit_len: u32,
    rows0: u32,
    rows1: u32,
    rows2: u32,
    src_first: u32,
    src_as: u32,
    src_s0: u32,
    src_s1: u32,
    src_s2: u32,
    dst_first: u32,
    dst_as: u32,
    dst_s0: u32,
    dst_s1: u32,
    dst_s2: u32,
    aux_first: u32,
    aux_us: u32,
    aux_s0: u32,
    aux_s1: u32,
    aux_s2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> src: array<{{SRC_ARRAY}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{DST_ARRAY}}>;
@group(0) @binding(3) var<storage, read_write> aux: array<acc_t>;

const MODE: u32 = {{MODE}}u;
const PHASE: u32 = {{PHASE}}u;
const CARRY: bool = {{CARRY}};         // rows have several units: PHASE 1 reads carries from aux
const WG: u32 = {{WG}}u;
const ITEMS: u32 = {{ITEMS}}u;
const BLOCK: u32 = WG * ITEMS;
const RAKE: u32 = {{RAKE}}u;           // RAKE * RAKE == WG in the rows mode's PHASE 0
// Workgroup memory only where it is used (WebGPU zero-fills it for every workgroup): partials in
// the rows mode, the staged unit only in its scan phase.
const ROWS_SCAN: u32 = (1u - MODE) * PHASE;
const TILE: u32 = ROWS_SCAN * BLOCK + (1u - ROWS_SCAN);
const PART: u32 = (1u - MODE) * WG + MODE;

var<workgroup> tile: array<acc_t, TILE>;
var<workgroup> part: array<acc_t, PART>;

{{HELPERS}}

fn identity() -> acc_t {
    return {{IDENTITY}};
}

fn combine(a: acc_t, b: acc_t) -> acc_t {
    return {{COMBINE}};
}

fn load_src(i: u32) -> acc_t {
    return {{LOAD_SRC}};
}

fn store_dst(i: u32, v: acc_t) {
{{STORE_DST}}
}

// Element offsets of row r (r0 fastest) in src, dst and aux: (src, dst, aux).
fn row_offsets(r: u32) -> vec3<u32> {
    let r0 = r % params.rows0;
    let t = r / params.rows0;
    let r1 = t % params.rows1;
    let r2 = t / params.rows1;
    return vec3<u32>(
        params.src_first + r0 * params.src_s0 + r1 * params.src_s1 + r2 * params.src_s2,
        params.dst_first + r0 * params.dst_s0 + r1 * params.dst_s1 + r2 * params.dst_s2,
        params.aux_first + r0 * params.aux_s0 + r1 * params.aux_s1 + r2 * params.aux_s2,
    );
}

// The carry into unit j of the row whose aux offset is `abase` (PHASE 1; identity when the rows
// are single units, CARRY false, which is the common case: no aux read at all).
fn carry_in(abase: u32, j: u32) -> acc_t {
    var c = identity();
    if (CARRY && params.u0 + j > 0u) {
        c = aux[abase + (j - 1u) * params.aux_us];
    }
    return c;
}

// Inclusive Hillis-Steele scan of part[0..WG) (rows mode; every invocation calls it).
fn scan_partials(lid: u32) {
    for (var off = 1u; off < WG; off = off << 1u) {
        var v = part[lid];
        if (lid >= off) {
            v = combine(part[lid - off], v);
        }
        workgroupBarrier();
        part[lid] = v;
        workgroupBarrier();
    }
}

fn rows_main(g: u32, lid: u32) {
    let r = g / params.units;
    let j = g % params.units;
    let base = row_offsets(r);
    let count = min(BLOCK, params.n - (params.u0 + j) * BLOCK);
    let sbase = base.x + j * BLOCK * params.src_as;

    if (PHASE == 0u) {
        // the unit's total: coalesced loads combined per invocation, then a raking reduction
        // (RAKE invocations combine RAKE partials each, one combines those): three barrier-free
        // stretches instead of a tree's log2(WG)
        var acc = identity();
        for (var e = 0u; e < ITEMS; e++) {
            let i = e * WG + lid;
            if (i < count) {
                acc = combine(acc, load_src(sbase + i * params.src_as));
            }
        }
        part[lid] = acc;
        workgroupBarrier();
        if (lid < RAKE) {
            var t = part[lid * RAKE];
            for (var q = 1u; q < RAKE; q++) {
                t = combine(t, part[lid * RAKE + q]);
            }
            part[lid * RAKE] = t;
        }
        workgroupBarrier();
        if (lid == 0u) {
            var t = part[0];
            for (var q = 1u; q < RAKE; q++) {
                t = combine(t, part[q * RAKE]);
            }
            aux[base.z + j * params.aux_us] = t;
        }
        return;
    }

    for (var e = 0u; e < ITEMS; e++) {
        let i = e * WG + lid;
        var v = identity();
        if (i < count) {
            v = load_src(sbase + i * params.src_as);
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
    scan_partials(lid);
    var prefix = carry_in(base.z, j);
    if (lid > 0u) {
        prefix = combine(prefix, part[lid - 1u]);
    }
    for (var e = 0u; e < ITEMS; e++) {
        tile[lid * ITEMS + e] = combine(prefix, tile[lid * ITEMS + e]);
    }
    workgroupBarrier();
    let dbase = base.y + j * BLOCK * params.dst_as;
    for (var e = 0u; e < ITEMS; e++) {
        let i = e * WG + lid;
        if (i < count) {
            store_dst(dbase + i * params.dst_as, tile[i]);
        }
    }
}

// The next element of a serial scan: acc = acc op v, stored at dst[di] in PHASE 1.
fn step(acc: acc_t, v: acc_t, di: u32) -> acc_t {
    let r = combine(acc, v);
    if (PHASE == 1u) {
        store_dst(di, r);
    }
    return r;
}

fn columns_main(t: u32) {
    let nrows = params.rows0 * params.rows1 * params.rows2;
    if (t >= nrows * params.units) {
        return;
    }
    let r = t % nrows;
    let j = t / nrows;
    let base = row_offsets(r);
    let first = j * params.unit_len;
    let count = min(params.unit_len, params.n - (params.u0 + j) * params.unit_len);
    let sa = params.src_as;
    let da = params.dst_as;
    var si = base.x + first * sa;
    var di = base.y + first * da;
    var acc = identity();
    if (PHASE == 1u) {
        acc = carry_in(base.z, j);
    }
    // eight independent loads in flight per invocation, then the serial combines: the loop is
    // bound by memory latency, not by the dependency chain
    var e = 0u;
    for (; e + 8u <= count; e += 8u) {
        let v0 = load_src(si);
        let v1 = load_src(si + sa);
        let v2 = load_src(si + 2u * sa);
        let v3 = load_src(si + 3u * sa);
        let v4 = load_src(si + 4u * sa);
        let v5 = load_src(si + 5u * sa);
        let v6 = load_src(si + 6u * sa);
        let v7 = load_src(si + 7u * sa);
        acc = step(acc, v0, di);
        acc = step(acc, v1, di + da);
        acc = step(acc, v2, di + 2u * da);
        acc = step(acc, v3, di + 3u * da);
        acc = step(acc, v4, di + 4u * da);
        acc = step(acc, v5, di + 5u * da);
        acc = step(acc, v6, di + 6u * da);
        acc = step(acc, v7, di + 7u * da);
        si += 8u * sa;
        di += 8u * da;
    }
    for (; e < count; e++) {
        acc = step(acc, load_src(si), di);
        si += sa;
        di += da;
    }
    if (PHASE == 0u) {
        aux[base.z + j * params.aux_us] = acc;
    }
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (MODE == 1u) {
        columns_main(g * WG + lid);
        return;
    }
    if (g >= params.rows0 * params.rows1 * params.rows2 * params.units) {
        return;
    }
    rows_main(g, lid);
}
