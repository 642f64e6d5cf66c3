// Householder tridiagonalisation (sytd2), the many-workgroup half of step j: the rank-2 update of
// step j - 1 fused with the product of reflector j.
//
// Rows and columns r, c >= j + 1 of A (n x n, row-major, at a0): A[r][c] -= v_r w_c + w_r v_c
// (v = v_{j-1}, w from linalg_tridiag_house.wgsl; none for j = 0), and p_r = tau_j sum_c
// A[r][c] v_j[c] with the updated entries (X = d | e | tau | w | p at x0, V's rows the
// reflectors at v0). RB rows per workgroup, the columns strided over its WG invocations.

alias T = {{T}};
const WG: u32 = {{WG}}u;
const RB: u32 = {{RB}}u;

struct Params { n: u32, j: u32, a0: u32, v0: u32, x0: u32, q0: u32, q1: u32, q2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> A: array<T>;
@group(0) @binding(2) var<storage, read> V: array<T>;
@group(0) @binding(3) var<storage, read_write> X: array<T>;

var<workgroup> red: array<T, WG * RB>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nw: vec3<u32>) {
    let n = p.n;
    let j = p.j;
    let g = wid.x + wid.y * nw.x;
    let r0 = j + 1u + g * RB;
    if r0 >= n {
        return;
    }
    let xt = p.x0 + 2u * n;
    let xw = xt + n;
    let xp = xw + n;
    let upd = j > 0u;
    let prev = select(0u, p.v0 + (j - 1u) * n, upd);
    let cur = p.v0 + j * n;
    var vr: array<T, RB>;
    var wr: array<T, RB>;
    var acc: array<T, RB>;
    for (var q = 0u; q < RB; q++) {
        acc[q] = T(0);
        vr[q] = T(0);
        wr[q] = T(0);
        let r = r0 + q;
        if upd && r < n {
            vr[q] = V[prev + r];
            wr[q] = X[xw + r];
        }
    }
    for (var c = j + 1u + lid; c < n; c += WG) {
        let uc = V[cur + c];
        var vc = T(0);
        var wc = T(0);
        if upd {
            vc = V[prev + c];
            wc = X[xw + c];
        }
        for (var q = 0u; q < RB; q++) {
            let r = r0 + q;
            if r < n {
                let idx = p.a0 + r * n + c;
                var a = A[idx];
                if upd {
                    a = a - vr[q] * wc - wr[q] * vc;
                    A[idx] = a;
                }
                acc[q] = acc[q] + a * uc;
            }
        }
    }
    for (var q = 0u; q < RB; q++) {
        red[q * WG + lid] = acc[q];
    }
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if lid < s {
            for (var q = 0u; q < RB; q++) {
                red[q * WG + lid] = red[q * WG + lid] + red[q * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
    if lid < RB {
        let r = r0 + lid;
        if r < n {
            X[xp + r] = X[xt + j] * red[lid * WG];
        }
    }
}
