{{ENABLE}}
// Split-K combine (ops_gemm.record_combine), shared by gemm.wgsl, gemm_strided.wgsl and
// conv2d.wgsl run with SPLIT_K: sums the `splits` partial results of every output element in a
// fixed order (split 0, 1, ...; no atomics, so the result is bitwise reproducible) and applies
// the epilogue  C[idx] = alpha * sum + beta * C[idx]  (beta == 0 never reads C), cast to {{T}}.
//
// The partials P (acc_t) are `splits` runs of `count` = nz * n * m elements: element (i, j) of
// batch z in split s at s * count + (z * n + j) * m + i (gemm_core's layout). Its output index is
//     c_first + z * c_bs + (i / rows_inner) * c_gs + (i % rows_inner) * c_rs + j * c_cs
// with the strides as u32 bits of signed element strides (u32 arithmetic wraps): a column-major
// or general-stride gemm has rows_inner = m and c_gs = 0; conv2d's rows are (image, output
// position), rows_inner = positions per image and c_gs = the image stride of the NCHW output.
//#include common

alias acc_t = {{ACC}};

const WG: u32 = 256u;

struct Params {
    alpha: acc_t,
    beta: acc_t,
    count: u32,       // elements of one split: nz * n * m
    splits: u32,
    m: u32,
    n: u32,
    c_first: u32,
    c_rs: u32,
    c_cs: u32,
    c_bs: u32,
    rows_inner: u32,
    c_gs: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> P: array<acc_t>;
@group(0) @binding(2) var<storage, read_write> C: array<{{T}}>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let e = linear_group(wid, nwg) * WG + lid;
    if (e >= params.count) {
        return;
    }
    var sum = P[e];
    for (var s = 1u; s < params.splits; s++) {
        sum += P[e + s * params.count];
    }
    let i = e % params.m;
    let t = e / params.m;
    let j = t % params.n;
    let z = t / params.n;
    let g = i / params.rows_inner;
    let idx = params.c_first + z * params.c_bs + g * params.c_gs
        + (i - g * params.rows_inner) * params.c_rs + j * params.c_cs;
    var r = params.alpha * sum;
    if (params.beta != acc_t(0)) {
        r = r + params.beta * acc_t(C[idx]);
    }
    C[idx] = {{T}}(r);
}
