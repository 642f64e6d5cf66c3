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
//   PHASE 1 (scan):   scan each unit starting from its carry and store every element once,
//                     converted to dst's type. CARRY 0: rows are single units, the carry is the
//                     identity (no aux read at all: the common case); CARRY 1: the host has
//                     scanned the totals in between, the carry is aux of unit j - 1; CARRY 2
//                     (vector mode): aux holds the raw totals and the workgroup combines those
//                     of the row's units before its own (one dispatch fewer than scanning them).
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
//   MODE 2 (vector):  the rows mode for a contiguous src axis whose rows start 4-element aligned
//                     in its window: src is bound as array<vec4<..>> and read 16 bytes (32 for
//                     64-bit types) per load. One workgroup per (row, unit) (units of a
//                     multiple of 4 positions, normally of 4 * 4 * WG), walked in *steps* of
//                     4 * 4 * WG positions: in each step invocation lid holds the four vectors
//                     lid + k * WG (k = 0..3; every load coalesced), scans each vector in
//                     registers, and a double-buffered Hillis-Steele scan of the four vector
//                     totals (one vec4 per invocation) gives every vector its prefix; the carry
//                     runs on from step to step. dst is stored a vector at a time when VEC_STORE
//                     (contiguous, aligned like src), element by element through its strides
//                     otherwise. Axis positions are shifted by `head` (< 4) so that vectors are
//                     aligned: position q holds element q - head, and positions < head of the
//                     row's first unit are skipped. PHASE 0 loads the same vectors (four in
//                     flight per invocation) and reduces them.
//
// Values are read from src's storage type (packed 8/16-bit included) and converted to acc_t
// ({{ACC}}) on load (LOAD_SRC), combined in acc_t, converted to dst's type on store
// (STORE_DST: a plain store, or atomicAnd/atomicOr of the element's lane for packed dst types, so
// elements of different rows sharing a u32 word never race). Every combine happens in an order
// fixed by the shape and layout (never by timing), so float results are the same bit for bit
// from run to run.
//#include common

alias acc_t = {{ACC}};
{{VEC_DECL}}

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
    head: u32,      // vector mode: skipped positions at the start of each row (0 elsewhere)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<{{SRC_ARRAY}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{DST_ARRAY}}>;
@group(0) @binding(3) var<storage, read_write> aux: array<acc_t>;

const MODE: u32 = {{MODE}}u;
const PHASE: u32 = {{PHASE}}u;
const CARRY: u32 = {{CARRY}}u;         // where PHASE 1 takes the carry into a unit (see above)
const VEC_STORE: bool = {{VEC_STORE}};  // vector mode: dst is bound as vectors
const PREFETCH: bool = {{PREFETCH}};    // vector mode: a step's loads issued before the last one's scan
const WG: u32 = {{WG}}u;
const ITEMS: u32 = {{ITEMS}}u;
const BLOCK: u32 = WG * ITEMS;
const RAKE: u32 = {{RAKE}}u;           // RAKE * RAKE == WG where reduce_partials runs, RAKE % 4 == 0
// Workgroup memory only where it is used (WebGPU zero-fills it for every workgroup; the host
// sizes each array 1 where its mode does not use it): the staged unit in the rows mode's scan
// phase, scalar partials in the rows and vector modes, the two halves of the vector totals'
// double-buffered scan in the vector mode's scan phase.
var<workgroup> tile: array<acc_t, {{TILE}}>;
var<workgroup> part: array<acc_t, {{PART}}>;
var<workgroup> vpart: array<vec_t, {{VPART}}>;

{{HELPERS}}

fn identity() -> acc_t {
    return {{IDENTITY}};
}

fn combine(a: acc_t, b: acc_t) -> acc_t {
    return {{COMBINE}};
}

fn combine4(a: vec_t, b: vec_t) -> vec_t {
    return {{COMBINE4}};
}

fn splat4(x: acc_t) -> vec_t {
    return {{SPLAT4}};
}

fn load_src(i: u32) -> acc_t {
    return {{LOAD_SRC}};
}

fn store_dst(i: u32, v: acc_t) {
{{STORE_DST}}
}

// Vector mode: vector k of src (the elements 4k .. 4k + 3), converted.
fn load_vec(k: u32) -> vec_t {
{{LOAD_VEC}}
}

// Vector mode with VEC_STORE: vector k of dst (empty elsewhere).
fn store_vec(k: u32, v: vec_t) {
{{STORE_VEC}}
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

// The carry into unit j of the row whose aux offset is `abase` (PHASE 1, CARRY 0 or 1).
fn carry_in(abase: u32, j: u32) -> acc_t {
    var c = identity();
    if (CARRY == 1u && params.u0 + j > 0u) {
        c = aux[abase + (j - 1u) * params.aux_us];
    }
    return c;
}

// The combine of part[b], part[b + st], ..., part[b + (RAKE - 1) * st] (RAKE a multiple of 4):
// pairs of pairs combined serially, so the longest chain of combines is 2 + RAKE / 4.
fn rake(b: u32, st: u32) -> acc_t {
    var t = identity();
    for (var q = 0u; q < RAKE; q += 4u) {
        let i = b + q * st;
        let pair = combine(part[i], part[i + st]);
        t = combine(t, combine(pair, combine(part[i + 2u * st], part[i + 3u * st])));
    }
    return t;
}

// The combine of every invocation's `v` over the workgroup, returned to every invocation: RAKE
// invocations rake RAKE partials each, then every invocation rakes those (two barriers; three
// barrier-free stretches instead of a tree's log2(WG)). Called once per workgroup.
fn reduce_partials(lid: u32, v: acc_t) -> acc_t {
    part[lid] = v;
    workgroupBarrier();
    if (lid < RAKE) {
        part[lid * RAKE] = rake(lid * RAKE, 1u);
    }
    workgroupBarrier();
    return rake(0u, RAKE);
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
        var acc = identity();
        for (var e = 0u; e < ITEMS; e++) {
            let i = e * WG + lid;
            if (i < count) {
                acc = combine(acc, load_src(sbase + i * params.src_as));
            }
        }
        let t = reduce_partials(lid, acc);
        if (lid == 0u) {
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

// ---- vector mode ----------------------------------------------------------------------------
// A unit's positions x run over [0, count); those below lo (the row's head, in its first unit
// only) are skipped. The unit starts at src element sbase and dst element dbase, both multiples
// of 4 where they are read or written as vectors.

// The four invocation vectors of one step (at unit positions x, x + 4WG, x + 8WG, x + 12WG).
struct Quad {
    a: vec_t,
    b: vec_t,
    c: vec_t,
    d: vec_t,
}

// Positions x .. x + 3 (x a multiple of 4): one vector load when all are in [lo, count), else
// the elements in range one by one and the identity for the others.
fn load4(sbase: u32, x: u32, lo: u32, count: u32) -> vec_t {
    if (x >= lo && x + 4u <= count) {
        return load_vec((sbase + x) >> 2u);
    }
    var v = splat4(identity());
    if (x >= lo && x < count) {
        v.x = load_src(sbase + x);
    }
    if (x + 1u >= lo && x + 1u < count) {
        v.y = load_src(sbase + x + 1u);
    }
    if (x + 2u >= lo && x + 2u < count) {
        v.z = load_src(sbase + x + 2u);
    }
    if (x + 3u >= lo && x + 3u < count) {
        v.w = load_src(sbase + x + 3u);
    }
    return v;
}

// Stores positions x .. x + 3 that lie in [lo, count): one vector store when VEC_STORE and all
// do, else element by element through dst's axis stride.
fn store4(dbase: u32, x: u32, lo: u32, count: u32, v: vec_t) {
    if (VEC_STORE && x >= lo && x + 4u <= count) {
        store_vec((dbase + x) >> 2u, v);
        return;
    }
    let da = params.dst_as;
    if (x >= lo && x < count) {
        store_dst(dbase + x * da, v.x);
    }
    if (x + 1u >= lo && x + 1u < count) {
        store_dst(dbase + (x + 1u) * da, v.y);
    }
    if (x + 2u >= lo && x + 2u < count) {
        store_dst(dbase + (x + 2u) * da, v.z);
    }
    if (x + 3u >= lo && x + 3u < count) {
        store_dst(dbase + (x + 3u) * da, v.w);
    }
}

// The step's four vectors of the invocation whose first position is x. `whole` (uniform): the
// workgroup's whole step is in range (every step but a unit's last, and the row's first when it
// has a head), so four independent vector loads are in flight with no per-lane test.
fn load_quad(sbase: u32, x: u32, lo: u32, count: u32, whole: bool) -> Quad {
    let s = 4u * WG;
    if (whole) {
        let k = (sbase + x) >> 2u;
        return Quad(load_vec(k), load_vec(k + WG), load_vec(k + 2u * WG), load_vec(k + 3u * WG));
    }
    return Quad(load4(sbase, x, lo, count), load4(sbase, x + s, lo, count),
                load4(sbase, x + 2u * s, lo, count), load4(sbase, x + 3u * s, lo, count));
}

// Inclusive scan of the four elements of v.
fn scan4(v: vec_t) -> vec_t {
    let y = combine(v.x, v.y);
    let z = combine(y, v.z);
    return vec_t(v.x, y, z, combine(z, v.w));
}

// Inclusive scan of every invocation's v over the workgroup, lane by lane: Hillis-Steele,
// double-buffered (one barrier per step) in vpart's halves, starting in half `o` (0 or WG).
// Returns the half holding the results: vpart[o + i] is invocation i's. The next call starts in
// the other half, so that it may begin while invocations still read these results.
fn scan_vectors(lid: u32, v: vec_t, start: u32) -> u32 {
    var o = start;
    var acc = v;
    vpart[o + lid] = v;
    workgroupBarrier();
    for (var off = 1u; off < WG; off = off << 1u) {
        if (lid >= off) {
            acc = combine4(vpart[o + lid - off], acc);
        }
        o = WG - o;
        vpart[o + lid] = acc;
        workgroupBarrier();
    }
    return o;
}

// CARRY 2: the combine of the raw totals of the row's units before unit j (the row's unit 0 is
// at aux offset abase - u0 * aux_us), four loads in flight per invocation, then reduced over the
// workgroup; every invocation gets it.
fn carry_reduced(abase: u32, j: u32, lid: u32) -> acc_t {
    let k = params.u0 + j;
    let us = params.aux_us;
    let first = abase - params.u0 * us;
    var a = identity();
    var b = identity();
    var c = identity();
    var d = identity();
    for (var i0 = 0u; i0 < k; i0 += 4u * WG) {
        let i = i0 + lid;
        if (i < k) {
            a = combine(a, aux[first + i * us]);
        }
        if (i + WG < k) {
            b = combine(b, aux[first + (i + WG) * us]);
        }
        if (i + 2u * WG < k) {
            c = combine(c, aux[first + (i + 2u * WG) * us]);
        }
        if (i + 3u * WG < k) {
            d = combine(d, aux[first + (i + 3u * WG) * us]);
        }
    }
    return reduce_partials(lid, combine(combine(a, b), combine(c, d)));
}

fn vector_main(g: u32, lid: u32) {
    let r = g / params.units;
    let j = g % params.units;
    let base = row_offsets(r);
    let unit = params.unit_len;
    let count = min(unit, params.n - (params.u0 + j) * unit);
    let lo = select(0u, params.head, params.u0 + j == 0u);
    let sbase = base.x + j * unit;
    let step = 16u * WG;  // positions per step of the workgroup
    let s = 4u * WG;      // positions between an invocation's vectors

    if (PHASE == 0u) {
        var acc = Quad(splat4(identity()), splat4(identity()), splat4(identity()), splat4(identity()));
        for (var x0 = 0u; x0 < count; x0 += step) {
            let q = load_quad(sbase, x0 + 4u * lid, lo, count, lo == 0u && x0 + step <= count);
            acc = Quad(combine4(acc.a, q.a), combine4(acc.b, q.b), combine4(acc.c, q.c),
                       combine4(acc.d, q.d));
        }
        let v = combine4(combine4(acc.a, acc.b), combine4(acc.c, acc.d));
        let t = reduce_partials(lid, combine(combine(v.x, v.y), combine(v.z, v.w)));
        if (lid == 0u) {
            aux[base.z + j * params.aux_us] = t;
        }
        return;
    }

    var carry = carry_in(base.z, j);
    if (CARRY == 2u) {
        carry = carry_reduced(base.z, j, lid);
    }
    // every element is carry op (a combine of the step's own elements): one combine with the
    // large running value per element and one per step, the rest among the step's elements
    let dbase = base.y + j * unit * params.dst_as;
    var o = WG;
    // PREFETCH: every step's vectors are loaded by the step before (before its workgroup scan,
    // so that they are in flight during it); the unit's first by the prologue
    var next = Quad(splat4(identity()), splat4(identity()), splat4(identity()), splat4(identity()));
    if (PREFETCH) {
        next = load_quad(sbase, 4u * lid, lo, count, lo == 0u && step <= count);
    }
    for (var x0 = 0u; x0 < count; x0 += step) {
        let x = x0 + 4u * lid;
        let whole = lo == 0u && x0 + step <= count;
        var q = next;
        if (PREFETCH) {
            let xn = x0 + step;  // none past the unit: load_quad then loads nothing
            next = load_quad(sbase, xn + 4u * lid, lo, count, xn + step <= count);
        } else {
            q = load_quad(sbase, x, lo, count, whole);
        }
        let a = scan4(q.a);
        let b = scan4(q.b);
        let c = scan4(q.c);
        let d = scan4(q.d);
        o = scan_vectors(lid, vec_t(a.w, b.w, c.w, d.w), WG - o);
        var e = splat4(identity());  // exclusive prefix of this invocation's vectors
        if (lid > 0u) {
            e = vpart[o + lid - 1u];
        }
        let t = vpart[o + WG - 1u];  // the step's four vector-row totals
        let t2 = combine(t.x, t.y);
        let t3 = combine(t2, t.z);
        let cv = splat4(carry);
        let ya = combine4(cv, combine4(splat4(e.x), a));
        let yb = combine4(cv, combine4(splat4(combine(t.x, e.y)), b));
        let yc = combine4(cv, combine4(splat4(combine(t2, e.z)), c));
        let yd = combine4(cv, combine4(splat4(combine(t3, e.w)), d));
        if (VEC_STORE && whole) {
            let k = (dbase + x) >> 2u;
            store_vec(k, ya);
            store_vec(k + WG, yb);
            store_vec(k + 2u * WG, yc);
            store_vec(k + 3u * WG, yd);
        } else {
            store4(dbase, x, lo, count, ya);
            store4(dbase, x + s, lo, count, yb);
            store4(dbase, x + 2u * s, lo, count, yc);
            store4(dbase, x + 3u * s, lo, count, yd);
        }
        carry = combine(carry, combine(t3, t.w));
    }
}

// ---- columns mode ---------------------------------------------------------------------------
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
    if (MODE == 2u) {
        vector_main(g, lid);
        return;
    }
    rows_main(g, lid);
}
