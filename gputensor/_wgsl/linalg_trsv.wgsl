// Triangular solve of a few right-hand columns, one workgroup per column, the whole n x n
// triangle streamed once per column: x := T^-1 x for T[t_first + i * t_ld + j] (MODE 0: unit
// lower, forward; 2: upper, backward) and column c of X, element r at
// X[x_first + r * x_rs + c * x_cs]. Blocks of 32 rows: the diagonal block and its part of the
// column are read into workgroup memory by all invocations, invocations 0..31 solve it (one
// row each, one barrier per row), then every invocation updates its rows of the rest of the
// column.
// Elements are T (real, or complex as vec2) with the sc_* helpers of linalg_scalar_*.
//#include common

alias T = {{T}};
alias R = {{R}};
const WG: u32 = {{WG}}u;
const MODE: u32 = {{MODE}}u;
const BS: u32 = 32u;

struct Params {
    n: u32, t_first: u32, t_ld: u32, x_first: u32,
    x_rs: u32, x_cs: u32, t_bs: u32, x_bs: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Tm: array<T>;
@group(0) @binding(2) var<storage, read_write> X: array<T>;

var<workgroup> xb: array<T, BS>;
var<workgroup> tb: array<T, BS * BS>;

var<private> t_first: u32;

fn tri(i: u32, j: u32) -> T {
    return Tm[t_first + i * p.t_ld + j];
}

{{SCALAR}}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = p.n;
    t_first = p.t_first + wid.y * p.t_bs;
    let xc = p.x_first + wid.y * p.x_bs + wid.x * p.x_cs;
    let blocks = (n + BS - 1u) / BS;
    for (var bb = 0u; bb < blocks; bb++) {
        var b0 = bb * BS;
        if MODE == 2u {
            b0 = (blocks - 1u - bb) * BS;
        }
        let bn = min(BS, n - b0);
        for (var e = lid; e < BS * BS; e += WG) {
            let i = e / BS;
            let q = e % BS;
            var v = T(0);
            if i < bn && q < bn {
                v = tri(b0 + i, b0 + q);
            }
            tb[e] = v;
        }
        var s = T(0);
        if lid < bn {
            s = X[xc + (b0 + lid) * p.x_rs];
        }
        workgroupBarrier();
        for (var step = 0u; step < bn; step++) {
            var q = step;
            if MODE == 2u {
                q = bn - 1u - step;
            }
            if lid == q {
                if MODE == 2u {
                    s = sc_div(s, tb[q * BS + q]);
                }
                xb[q] = s;
                X[xc + (b0 + q) * p.x_rs] = s;
            }
            workgroupBarrier();
            let below = select(lid > q, lid < q, MODE == 2u);
            if lid < bn && below {
                s = s - sc_mul(tb[lid * BS + q], xb[q]);
            }
        }
        workgroupBarrier();
        var r0 = b0 + bn;
        var r1 = n;
        if MODE == 2u {
            r0 = 0u;
            r1 = b0;
        }
        for (var r = r0 + lid; r < r1; r += WG) {
            var acc = T(0);
            //#unroll
            for (var q = 0u; q < BS; q++) {
                if q < bn {
                    acc = acc + sc_mul(tri(r, b0 + q), xb[q]);
                }
            }
            X[xc + r * p.x_rs] = X[xc + r * p.x_rs] - acc;
        }
        storageBarrier();
        workgroupBarrier();
    }
}
