// The rest of a tournament-pivoted LU panel, after its row swaps: every workgroup factors the
// jb x jb block of the pivot rows (their original values, W[w_first + q * w_bs + c * JB + j],
// in pivot order: the rows now on top of the panel) without further pivoting in workgroup
// memory; workgroup 0 writes it (unit L below the diagonal, U on and above) to the panel's top
// and or-es 1 into flag[0] for a zero pivot; the rows below (panel row i of matrix q at
// A[a_first + q * a_bs + i * ld + j], jb <= i < mp) become L's rows, A21 U^-1, each in the
// registers of one invocation. A zero pivot's column is left unscaled, as getrf leaves it.
//#include common

alias T = {{T}};
alias R = {{R}};
const WG: u32 = {{WG}}u;
const JB: u32 = {{JB}}u;
const FACTORED: bool = {{FACTORED}};

struct Params {
    a_first: u32, ld: u32, mp: u32, jb: u32,
    w_first: u32, w_bs: u32, a_bs: u32, p0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> A: array<T>;
@group(0) @binding(2) var<storage, read> W: array<T>;
@group(0) @binding(3) var<storage, read_write> flag: array<atomic<u32>>;

var<workgroup> u: array<T, JB * JB>;

{{SCALAR}}

@compute @workgroup_size({{WG}})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let jb = p.jb;
    let q = wid.y;
    let a0 = p.a_first + q * p.a_bs;
    for (var e = lid; e < JB * JB; e += WG) {
        u[e] = W[p.w_first + q * p.w_bs + e];
    }
    workgroupBarrier();
    for (var c = 0u; c < select(jb, 0u, FACTORED); c++) {
        let d = u[c * JB + c];
        workgroupBarrier();
        if sc_nonzero(d) {
            for (var e = lid; e < JB * JB; e += WG) {
                let i = e / JB;
                if i > c && i < jb && e % JB == c {
                    u[e] = sc_div(u[e], d);
                }
            }
        }
        workgroupBarrier();
        for (var e = lid; e < JB * JB; e += WG) {
            let i = e / JB;
            let j = e % JB;
            if i > c && i < jb && j > c && j < jb && sc_nonzero(d) {
                u[e] = u[e] - sc_mul(u[i * JB + c], u[c * JB + j]);
            }
        }
        workgroupBarrier();
    }
    if wid.x == 0u {
        for (var e = lid; e < JB * JB; e += WG) {
            let i = e / JB;
            let j = e % JB;
            if i < jb && j < jb {
                A[a0 + i * p.ld + j] = u[e];
                if i == j && !sc_nonzero(u[e]) {
                    atomicOr(&flag[0], 1u);
                }
            }
        }
    }
    for (var i = jb + wid.x * WG + lid; i < p.mp; i += nwg.x * WG) {
        var x: array<T, JB>;
        //#unroll
        for (var j = 0u; j < JB; j++) {
            x[j] = T(0);
            if j < jb {
                x[j] = A[a0 + i * p.ld + j];
            }
        }
        //#unroll
        for (var c = 0u; c < JB; c++) {
            let d = u[c * JB + c];
            if c < jb && sc_nonzero(d) {
                let l = sc_div(x[c], d);
                //#unroll
                for (var j = c + 1u; j < JB; j++) {
                    if j < jb {
                        x[j] = x[j] - sc_mul(l, u[c * JB + j]);
                    }
                }
                x[c] = l;
            }
        }
        //#unroll
        for (var j = 0u; j < JB; j++) {
            if j < jb {
                A[a0 + i * p.ld + j] = x[j];
            }
        }
    }
}
