// Integer matrix product in int64 / uint64 emulated as two 32-bit words (adapters without
// `shader-int64`; gputensor/_backend/ops_matmul_int.py), NumPy semantics:
//
//     C[q, i, j] = sum_p A[q, i, p] * B[q, p, j]      (i < m, j < n, p < k, q = workgroup_id.z)
//
// modulo 2^64. acc_t = {{ACC}} is `i64e` or `u64e` (int64_emul.wgsl); the low 64 bits of a
// product and of a sum are the same for both signednesses, so the product works on the raw
// words and signedness matters only where operands are converted to acc_t on load
// (LOAD_A / LOAD_B: any integer or bool storage type, 8/16-bit ones packed in u32 words).
// The parameters, bindings and dispatch grid are matmul_int.wgsl's, so the host plans both
// kernels alike; params.accumulate != 0 adds the product to C (k split over several dispatches).
//
// A sum of products is kept as the 64-bit sum of the low-word products a.lo * b.lo (with
// carries) plus the wrapping 32-bit sum of the cross products a.lo * b.hi + a.hi * b.lo, which
// only reach the high word: the high word is added once, when C is written.
//
// Tiling: one workgroup of WG x WG invocations computes a TS x TS tile of C (TS = 2 * WG);
// invocation (ly, lx) owns rows ly and ly + WG, columns lx and lx + WG. BK-deep slices of A and
// B are staged in workgroup memory as raw words.
//#include common

//#include matmul_int_params

const TS: u32 = {{TS}}u;              // tile of C per workgroup: TS x TS
const WG: u32 = TS / 2u;              // invocations along each side
const BK: u32 = 16u;                  // depth of a staged slice
const NT: u32 = WG * WG;

var<workgroup> As: array<vec2<u32>, BK * TS>;   // As[p * TS + i]
var<workgroup> Bs: array<vec2<u32>, BK * TS>;   // Bs[p * TS + j]

// A running sum: lo, the 64-bit sum of the low-word products; hi, the wrapping sum of the
// cross products (to add to the high word).
struct Sum {
    lo: vec2<u32>,
    hi: u32,
}

fn load_a_elem(i: u32) -> acc_t {
    return {{LOAD_A}};
}

fn load_b_elem(i: u32) -> acc_t {
    return {{LOAD_B}};
}

fn words(v: acc_t) -> vec2<u32> {
    return vec2<u32>(v.lo, v.hi);
}

fn mac(s: Sum, a: vec2<u32>, b: vec2<u32>) -> Sum {
    return Sum(x64w_add(s.lo, x64w_mul32(a.x, b.x)), s.hi + a.x * b.y + a.y * b.x);
}

fn store_c(base: u32, r: u32, c: u32, s: Sum) {
    if (r < params.m && c < params.n) {
        let idx = base + r * params.c_rs + c * params.c_cs;
        var w = vec2<u32>(s.lo.x, s.lo.y + s.hi);
        if (params.accumulate != 0u) {
            w = x64w_add(w, words(C[idx]));
        }
        C[idx] = acc_t(w.x, w.y);
    }
}

@compute @workgroup_size(WG, WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let lin = linear_group(wid, nwg);
    if (lin >= params.tiles_m * params.tiles_n) {
        return;
    }
    let row0 = (lin % params.tiles_m) * TS;
    let col0 = (lin / params.tiles_m) * TS;
    let abase = params.a_first + wid.z * params.a_bs;
    let bbase = params.b_first + wid.z * params.b_bs;
    let cbase = params.c_first + wid.z * params.c_bs;
    let t = lid.y * WG + lid.x;
    let ly = lid.y;
    let lx = lid.x;

    let zero = Sum(vec2<u32>(0u, 0u), 0u);
    var s00 = zero;
    var s01 = zero;
    var s10 = zero;
    var s11 = zero;
    for (var k0 = 0u; k0 < params.k; k0 += BK) {
        for (var e = t; e < TS * BK; e += NT) {
            let i = e % TS;
            let p = e / TS;
            var va = vec2<u32>(0u, 0u);
            if (row0 + i < params.m && k0 + p < params.k) {
                va = words(load_a_elem(abase + (row0 + i) * params.a_rs + (k0 + p) * params.a_cs));
            }
            As[p * TS + i] = va;
            var vb = vec2<u32>(0u, 0u);
            if (k0 + p < params.k && col0 + i < params.n) {
                vb = words(load_b_elem(bbase + (k0 + p) * params.b_rs + (col0 + i) * params.b_cs));
            }
            Bs[p * TS + i] = vb;
        }
        workgroupBarrier();
        for (var p = 0u; p < BK; p++) {
            let a0 = As[p * TS + ly];
            let a1 = As[p * TS + ly + WG];
            let b0 = Bs[p * TS + lx];
            let b1 = Bs[p * TS + lx + WG];
            s00 = mac(s00, a0, b0);
            s01 = mac(s01, a0, b1);
            s10 = mac(s10, a1, b0);
            s11 = mac(s11, a1, b1);
        }
        workgroupBarrier();
    }
    store_c(cbase, row0 + ly, col0 + lx, s00);
    store_c(cbase, row0 + ly, col0 + lx + WG, s01);
    store_c(cbase, row0 + ly + WG, col0 + lx, s10);
    store_c(cbase, row0 + ly + WG, col0 + lx + WG, s11);
}
