// LU panel with partial pivoting (LAPACK's getf2 on an mp x jb panel, jb <= 32), one workgroup,
// in global memory: element (i, j) of the panel is A[a_first + i * ld + j]. For each column: the
// first row of largest magnitude is the pivot, its index (plus row0, the panel's first row in the
// matrix) goes to piv[piv_first + c], the rows are swapped across the panel, the column below is
// scaled and the rest of the panel updated; the same pass finds the candidates of the next
// pivot. A zero pivot column sets flag[0] and is skipped (an all-NaN column is not flagged).
//#include common

alias T = {{T}};
const WG: u32 = {{WG}}u;

struct Params {
    a_first: u32, ld: u32, mp: u32, jb: u32,
    row0: u32, piv_first: u32, p0: u32, p1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> A: array<T>;
@group(0) @binding(2) var<storage, read_write> piv: array<u32>;
@group(0) @binding(3) var<storage, read_write> flag: array<atomic<u32>>;

var<workgroup> rv: array<T, WG>;
var<workgroup> ri: array<u32, WG>;

@compute @workgroup_size({{WG}})
fn main(@builtin(local_invocation_index) lid: u32) {
    let mp = p.mp;
    let jb = p.jb;
    let a0 = p.a_first;
    let ld = p.ld;
    // each invocation's largest magnitude (and its first row) of the column to pivot next,
    // among its rows i = lid, lid + WG, ...: column 0 here, column c + 1 while updating for c
    var bv = T(-1);
    var bi = 0u;
    for (var i = lid; i < mp; i += WG) {
        let v = abs(A[a0 + i * ld]);
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
        let pr = select(c, ri[0], pv >= T(0));
        if lid == 0u {
            piv[p.piv_first + c] = p.row0 + pr;
            if pv == T(0) {
                atomicOr(&flag[0], 1u);
            }
        }
        if pr != c {
            for (var q = lid; q < jb; q += WG) {
                let t = A[a0 + c * ld + q];
                A[a0 + c * ld + q] = A[a0 + pr * ld + q];
                A[a0 + pr * ld + q] = t;
            }
        }
        storageBarrier();
        workgroupBarrier();
        let d = A[a0 + c * ld + c];
        let next = c + 1u < jb;
        bv = T(-1);
        bi = c + 1u;
        for (var i = c + 1u + lid; i < mp; i += WG) {
            if d != T(0) {
                let l = A[a0 + i * ld + c] / d;
                A[a0 + i * ld + c] = l;
                for (var q = c + 1u; q < jb; q++) {
                    A[a0 + i * ld + q] = A[a0 + i * ld + q] - l * A[a0 + c * ld + q];
                }
            }
            if next {
                let v = abs(A[a0 + i * ld + c + 1u]);
                if v > bv {
                    bv = v;
                    bi = i;
                }
            }
        }
        storageBarrier();
        workgroupBarrier();
    }
}
