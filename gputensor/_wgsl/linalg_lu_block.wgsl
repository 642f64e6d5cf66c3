// LU panel with partial pivoting (LAPACK's getf2 on an mp x jb panel, jb <= JB), one workgroup
// per matrix of a stack: element (i, j) of workgroup q's panel is
// A[a_first + q * a_bs + i * ld + j], its pivots piv[piv_first + q * piv_bs + c]. Invocation lid owns the panel rows
// i = lid, lid + WG, ... for the whole factorization, so only the two swapped rows cross
// invocations (through workgroup memory): per column, the pivot is the first row of largest
// magnitude (a tree reduction), its owner and the owner of row c publish their rows, swap
// them, and every invocation updates its rows below c in registers (one load and one store of
// the row's remaining columns), finding the next column's candidates on the way. The pivot's
// index plus row0 goes to piv[piv_first + c]. A zero pivot column sets flag[0] and is skipped
// (an all-NaN column is not flagged), as getrf does.

// Elements are T (real, or complex as vec2; magnitudes |re| + |im|, as getrf's) with the
// sc_* helpers of linalg_scalar_*.
alias T = {{T}};
alias R = {{R}};
const WG: u32 = {{WG}}u;
const JB: u32 = {{JB}}u;

struct Params {
    a_first: u32, ld: u32, mp: u32, jb: u32,
    row0: u32, piv_first: u32, a_bs: u32, piv_bs: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> A: array<T>;
@group(0) @binding(2) var<storage, read_write> piv: array<u32>;
@group(0) @binding(3) var<storage, read_write> flag: array<atomic<u32>>;

var<workgroup> rv: array<R, WG>;
var<workgroup> ri: array<u32, WG>;
var<workgroup> prow: array<T, JB>;
var<workgroup> crow: array<T, JB>;

{{SCALAR}}

@compute @workgroup_size({{WG}})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let mp = p.mp;
    let jb = p.jb;
    let a0 = p.a_first + wid.x * p.a_bs;
    let piv0 = p.piv_first + wid.x * p.piv_bs;
    let ld = p.ld;
    // this invocation's largest magnitude (and its first row) of the column to pivot next
    var bv = R(-1);
    var bi = 0u;
    for (var i = lid; i < mp; i += WG) {
        let v = sc_norm1(A[a0 + i * ld]);
        if v > bv {
            bv = v;
            bi = i;
        }
    }
    for (var c = 0u; c < jb; c++) {
        rv[lid] = bv;
        ri[lid] = bi;
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s = s >> 1u) {
            if lid < s {
                let ov = rv[lid + s];
                let oi = ri[lid + s];
                if ov > rv[lid] || (ov == rv[lid] && oi < ri[lid]) {
                    rv[lid] = ov;
                    ri[lid] = oi;
                }
            }
            workgroupBarrier();
        }
        let pv = rv[0];
        let pr = select(c, ri[0], pv >= R(0));
        // the owners publish rows pr and c (whole panel rows: the columns before c hold L's
        // multipliers, swapped too)
        // (unrolled: the row's loads are issued together)
        if lid == pr % WG {
            //#unroll
            for (var q = 0u; q < JB; q++) {
                if q < jb {
                    prow[q] = A[a0 + pr * ld + q];
                }
            }
        }
        if lid == c % WG && pr != c {
            //#unroll
            for (var q = 0u; q < JB; q++) {
                if q < jb {
                    crow[q] = A[a0 + c * ld + q];
                }
            }
        }
        workgroupBarrier();
        if lid == 0u {
            piv[piv0 + c] = p.row0 + pr;
            if pv == R(0) {
                atomicOr(&flag[0], 1u);
            }
        }
        let d = prow[c];
        let next = c + 1u < jb;
        bv = R(-1);
        bi = c + 1u;
        var row: array<T, JB>;
        for (var i = lid; i < mp; i += WG) {
            if i < c {
                continue;
            }
            if i == c {
                if pr != c {  // row c becomes the pivot row (U's row c)
                    for (var q = 0u; q < jb; q++) {
                        A[a0 + c * ld + q] = prow[q];
                    }
                }
                continue;
            }
            let swapped = i == pr && pr != c;
            if swapped {  // the row that receives row c: its multipliers first
                for (var q = 0u; q < c; q++) {
                    A[a0 + i * ld + q] = crow[q];
                }
            }
            // load the remaining columns (from crow for the row that receives row c)
            //#unroll
            for (var q = 0u; q < JB; q++) {
                if q >= c && q < jb {
                    row[q] = select(A[a0 + i * ld + q], crow[q], swapped);
                }
            }
            var l = T(0);
            //#unroll
            for (var q = 0u; q < JB; q++) {
                if q == c {
                    l = row[q];
                }
            }
            if sc_nonzero(d) {
                l = sc_div(l, d);
                //#unroll
                for (var q = 0u; q < JB; q++) {
                    if q > c && q < jb {
                        row[q] = row[q] - sc_mul(l, prow[q]);
                    }
                }
            }
            //#unroll
            for (var q = 0u; q < JB; q++) {
                if q == c {
                    row[q] = l;
                }
                if q >= c && q < jb {
                    A[a0 + i * ld + q] = row[q];
                }
            }
            if next {
                var v = R(0);
                //#unroll
                for (var q = 0u; q < JB; q++) {
                    if q == c + 1u {
                        v = sc_norm1(row[q]);
                    }
                }
                if v > bv {
                    bv = v;
                    bi = i;
                }
            }
        }
        workgroupBarrier();
    }
}
