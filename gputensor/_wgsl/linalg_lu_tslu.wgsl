// One level of tournament pivoting of an LU panel (CALU's TSLU): each workgroup takes WG
// candidate rows of a jb-column panel (jb <= JB), runs partial-pivoting elimination on them in
// registers (a row per invocation) and emits the jb rows it chose as pivots, in pivot order, as
// candidates of the next level: their original values (re-read from S) and their panel rows.
// The rows a level reads: row r of matrix q (of a stack: wid.y) is S[s_first + q * s_bs + r *
// s_ld + j], its panel row r itself (level 0: s_idx = 0) or SI[si_first + q * si_bs + r]; an
// index of EMPTY marks an empty slot. Workgroup g writes slots g * JB + c (c < JB) of
// D[d_first + q * d_bs + slot * JB + j] and DI[di_first + q * di_bs + slot].
//
// The chosen rows stay in place (no swaps inside the level): a chosen row leaves the search and
// the updates. A column whose remaining magnitudes are all zero still chooses a row (without
// elimination), so a level emits min(jb, valid rows) candidates; NaN magnitudes rank below
// zero. The last level (one workgroup, final = 1) also turns its winners w_0..w_{jb-1} into
// getrf's swap sequence: piv[piv_first + q * piv_bs + c] = row0 + the position that holds w_c
// once the swaps of steps < c are done. FACTORED: the last level emits its winners as they are
// when chosen (L's multipliers left of the diagonal, U on and right of it: the pivot block
// factored, as linalg_lu_apply would factor it) instead of their original values.
//#include common

alias T = {{T}};
alias R = {{R}};
const WG: u32 = {{WG}}u;
const JB: u32 = {{JB}}u;
const EMPTY: u32 = 0xffffffffu;
const FACTORED: bool = {{FACTORED}};

struct Params {
    rows: u32, jb: u32, s_first: u32, s_ld: u32,
    s_bs: u32, s_idx: u32, si_first: u32, si_bs: u32,
    d_first: u32, d_bs: u32, di_first: u32, di_bs: u32,
    piv_first: u32, piv_bs: u32, row0: u32, final_level: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> S: array<T>;
@group(0) @binding(2) var<storage, read> SI: array<u32>;
@group(0) @binding(3) var<storage, read_write> D: array<T>;
@group(0) @binding(4) var<storage, read_write> DI: array<u32>;
@group(0) @binding(5) var<storage, read_write> piv: array<u32>;

var<workgroup> rv: array<R, WG>;
var<workgroup> ri: array<u32, WG>;
var<workgroup> prow: array<T, JB>;
var<workgroup> fac: array<T, JB * JB>;
var<workgroup> sel: array<u32, JB>;
var<workgroup> win: array<u32, JB>;
var<workgroup> mpos: array<u32, 2u * JB>;
var<workgroup> morig: array<u32, 2u * JB>;

{{SCALAR}}

// rv/ri[dst] := rv/ri[src] when src's magnitude is larger, or equal with a lower index.
fn take(dst: u32, src: u32) {
    let ov = rv[src];
    let oi = ri[src];
    if ov > rv[dst] || (ov == rv[dst] && oi < ri[dst]) {
        rv[dst] = ov;
        ri[dst] = oi;
    }
}

// The list slot of position `pos` among the m moved positions (m when absent).
fn slot_of_pos(pos: u32, m: u32) -> u32 {
    for (var s = 0u; s < m; s++) {
        if mpos[s] == pos {
            return s;
        }
    }
    return m;
}

@compute @workgroup_size({{WG}})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let jb = p.jb;
    let q = wid.y;
    let r = wid.x * WG + lid;
    let s0 = p.s_first + q * p.s_bs;
    var idx = EMPTY;
    if r < p.rows {
        idx = r;
        if p.s_idx != 0u {
            idx = SI[p.si_first + q * p.si_bs + r];
        }
    }
    var live = idx != EMPTY;
    var x: array<T, JB>;
    //#unroll
    for (var j = 0u; j < JB; j++) {
        x[j] = T(0);
        if live && j < jb {
            x[j] = S[s0 + r * p.s_ld + j];
        }
    }
    for (var c = 0u; c < jb; c++) {
        var xc = T(0);
        //#unroll
        for (var j = 0u; j < JB; j++) {
            if j == c {
                xc = x[j];
            }
        }
        let mag = sc_norm1(xc);
        rv[lid] = select(R(-1), select(R(-0.5), mag, mag == mag), live);
        ri[lid] = lid;
        workgroupBarrier();
        // the largest magnitude, the lowest index among equals: a binary step where WG is not a
        // power of four, then steps of four
        var s = WG;
        if (WG & 0x55555555u) == 0u {
            s = WG / 2u;
            if lid < s {
                take(lid, lid + s);
            }
            workgroupBarrier();
        }
        for (s = s / 4u; s > 0u; s = s / 4u) {
            if lid < s {
                take(lid, lid + s);
                take(lid, lid + 2u * s);
                take(lid, lid + 3u * s);
            }
            workgroupBarrier();
        }
        let best = rv[0];
        let w = ri[0];
        let found = best > R(-1);
        if lid == w && found {
            //#unroll
            for (var j = 0u; j < JB; j++) {
                prow[j] = x[j];
                fac[c * JB + j] = x[j];
            }
            live = false;
        }
        if lid == 0u {
            sel[c] = select(EMPTY, w, found);
        }
        workgroupBarrier();
        let d = prow[c];
        if found && live && sc_nonzero(d) {
            let l = sc_div(xc, d);
            //#unroll
            for (var j = 0u; j < JB; j++) {
                if j > c && j < jb {
                    x[j] = x[j] - sc_mul(l, prow[j]);
                }
                if FACTORED && j == c {
                    x[j] = l;  // (L's entry: the row holds L and U's parts once chosen)
                }
            }
        }
        workgroupBarrier();
    }
    // the winners' original rows and panel indices, in pivot order
    let slot = wid.x * JB;
    for (var e = lid; e < JB * JB; e += WG) {
        let c = e / JB;
        let j = e % JB;
        var v = T(0);
        let t = select(EMPTY, sel[c], c < jb);
        if t != EMPTY && j < jb {
            if FACTORED && p.final_level != 0u {
                v = fac[e];
            } else {
                v = S[s0 + (wid.x * WG + t) * p.s_ld + j];
            }
        }
        D[p.d_first + q * p.d_bs + (slot + c) * JB + j] = v;
    }
    if lid < JB {
        let t = select(EMPTY, sel[lid], lid < jb);
        var o = EMPTY;
        if t != EMPTY {
            let rt = wid.x * WG + t;
            o = rt;
            if p.s_idx != 0u {
                o = SI[p.si_first + q * p.si_bs + rt];
            }
        }
        DI[p.di_first + q * p.di_bs + slot + lid] = o;
        win[lid] = o;
    }
    if p.final_level == 0u {
        return;
    }
    workgroupBarrier();
    if lid == 0u {
        // getrf's swaps: step c swaps position c with the position holding w_c; (mpos, morig)
        // lists the positions whose row is not their own
        var m = 0u;
        for (var c = 0u; c < jb; c++) {
            let wc = win[c];
            var at = wc;
            for (var s = 0u; s < m; s++) {
                if morig[s] == wc {
                    at = mpos[s];
                }
            }
            piv[p.piv_first + q * p.piv_bs + c] = p.row0 + at;
            if at != c {
                let sc = slot_of_pos(c, m);
                let oc = select(c, morig[sc], sc < m);
                if sc == m {
                    mpos[m] = c;
                    m = m + 1u;
                }
                morig[sc] = wc;
                let sa = slot_of_pos(at, m);
                if sa == m {
                    mpos[m] = at;
                    m = m + 1u;
                }
                morig[sa] = oc;
            }
        }
    }
}
