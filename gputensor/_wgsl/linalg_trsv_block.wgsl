// One block step of a triangular solve of a few right-hand columns over many workgroups:
// x := T^-1 x for T[t_first + q * t_bs + i * t_ld + j] (MODE 0: unit lower, forward; 2: upper,
// backward) and column c = wid.y of matrix q = wid.z of X, element r at
// X[x_first + q * x_bs + r * x_rs + c * x_cs]. A dispatch takes the diagonal block of rows
// [j0, j0 + jb): every workgroup solves it in workgroup memory from its current values, then
// subtracts its part from the rows still ahead (below it for MODE 0, above for 2; a row per
// invocation). The block's own rows are read by every workgroup, so they are written one
// dispatch later: workgroup 0 solves the previous step's block [wb, wb + wjb) again (no
// workgroup writes it in this step) and stores it. The last step has jb = 0 and only stores.
// SWEEP: a block is solved by its rows' invocations column by column (a barrier per column),
// else by invocation 0 alone.
// Elements are T (real, or complex as vec2) with the sc_* helpers of linalg_scalar_*.
//#include common

alias T = {{T}};
alias R = {{R}};
const WG: u32 = {{WG}}u;
const MODE: u32 = {{MODE}}u;
const BS: u32 = 32u;
const SWEEP: bool = {{SWEEP}};

struct Params {
    n: u32, j0: u32, jb: u32, t_first: u32,
    t_ld: u32, x_first: u32, x_rs: u32, x_cs: u32,
    t_bs: u32, x_bs: u32, wb: u32, wjb: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Tm: array<T>;
@group(0) @binding(2) var<storage, read_write> X: array<T>;

var<workgroup> tb: array<T, BS * BS>;
var<workgroup> xb: array<T, BS>;

{{SCALAR}}

// tb, xb := the diagonal block [b0, b0 + nb) and its values of the column; then xb solved.
fn solve_block(b0: u32, nb: u32, tf: u32, xc: u32, lid: u32) {
    for (var e = lid; e < BS * BS; e += WG) {
        let i = e / BS;
        let j = e % BS;
        var v = T(0);
        if i < nb && j < nb {
            v = Tm[tf + (b0 + i) * p.t_ld + b0 + j];
        }
        tb[e] = v;
    }
    if lid < BS {
        var v = T(0);
        if lid < nb {
            v = X[xc + (b0 + lid) * p.x_rs];
        }
        xb[lid] = v;
    }
    workgroupBarrier();
    if SWEEP {
        // column by column over the block's rows, one barrier a column: row i of the block is
        // final (MODE 2: up to its division) once the columns before it are subtracted
        if MODE == 2u {
            for (var ii = 0u; ii < nb; ii++) {
                let i = nb - 1u - ii;
                let xi = sc_div(xb[i], tb[i * BS + i]);
                if lid < i {
                    xb[lid] = xb[lid] - sc_mul(tb[lid * BS + i], xi);
                }
                workgroupBarrier();
            }
            if lid < nb {
                xb[lid] = sc_div(xb[lid], tb[lid * BS + lid]);
            }
        } else {
            for (var i = 0u; i < nb; i++) {
                let xi = xb[i];
                if lid > i && lid < nb {
                    xb[lid] = xb[lid] - sc_mul(tb[lid * BS + i], xi);
                }
                workgroupBarrier();
            }
        }
    } else if lid == 0u {
        if MODE == 2u {
            for (var ii = 0u; ii < nb; ii++) {
                let i = nb - 1u - ii;
                var s = xb[i];
                for (var q = i + 1u; q < nb; q++) {
                    s = s - sc_mul(tb[i * BS + q], xb[q]);
                }
                xb[i] = sc_div(s, tb[i * BS + i]);
            }
        } else {
            for (var i = 0u; i < nb; i++) {
                var s = xb[i];
                for (var q = 0u; q < i; q++) {
                    s = s - sc_mul(tb[i * BS + q], xb[q]);
                }
                xb[i] = s;
            }
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let tf = p.t_first + wid.z * p.t_bs;
    let xc = p.x_first + wid.z * p.x_bs + wid.y * p.x_cs;
    let j0 = p.j0;
    let jb = p.jb;
    if jb > 0u {
        solve_block(j0, jb, tf, xc, lid);
        var lo = j0 + jb;
        var hi = p.n;
        if MODE == 2u {
            lo = 0u;
            hi = j0;
        }
        for (var i = lo + wid.x * WG + lid; i < hi; i += nwg.x * WG) {
            var s = X[xc + i * p.x_rs];
            let row = tf + i * p.t_ld + j0;
            //#unroll
            for (var q = 0u; q < BS; q++) {
                if q < jb {
                    s = s - sc_mul(Tm[row + q], xb[q]);
                }
            }
            X[xc + i * p.x_rs] = s;
        }
        workgroupBarrier();
    }
    if wid.x == 0u && p.wjb > 0u {
        solve_block(p.wb, p.wjb, tf, xc, lid);
        if lid < p.wjb {
            X[xc + (p.wb + lid) * p.x_rs] = xb[lid];
        }
    }
}
