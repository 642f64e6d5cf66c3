// FMA throughput probes (benchmarks/tools/fma_peak.py), {{T}} = f64 or f32; operands come from
// the uniform, so the compiler cannot fold the chains, and every result is stored.
//   chains: every invocation runs `iters` rounds of 32 independent fma chains (eight vec4
//           accumulators), then stores their sum.
//   lds:    the gemm core's inner loop alone: every invocation of a 256-invocation workgroup (a
//           16 x 16 grid, like 128x128 tiles of 8x8) reads, per round, two row quads of A and two
//           column quads of B from workgroup memory staged as two planes of vec2 pairs
//           (gemm_stage_pairs.wgsl's layout) and accumulates their 8 x 8 outer product with 64 fma
//           into 16 vec4 accumulators; rounds walk 8 depth rows as mma_tile does. No barrier in
//           the loop: what shared loads and fma cost without the K loop around them.
//           With TM = 4: 4 x 8 micro-tiles (one row quad of A, 32 fma per round).
struct Params {
    iters: u32,
    mul: f32,
    add: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<{{T}}>;

@compute @workgroup_size(256)
fn chains(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = gid.x + gid.y * nwg.x * 256u;
    let a = vec4<{{T}}>({{T}}(p.mul));
    let b = vec4<{{T}}>({{T}}(p.add));
    let s = {{T}}(idx) * {{T}}(1e-9);
    var c0 = vec4<{{T}}>(s, s + {{T}}(1), s + {{T}}(2), s + {{T}}(3));
    var c1 = c0 + b;
    var c2 = c1 + b;
    var c3 = c2 + b;
    var c4 = c3 + b;
    var c5 = c4 + b;
    var c6 = c5 + b;
    var c7 = c6 + b;
    for (var i = 0u; i < p.iters; i++) {
        c0 = fma(c0, a, b);
        c1 = fma(c1, a, b);
        c2 = fma(c2, a, b);
        c3 = fma(c3, a, b);
        c4 = fma(c4, a, b);
        c5 = fma(c5, a, b);
        c6 = fma(c6, a, b);
        c7 = fma(c7, a, b);
    }
    let t = (c0 + c1) + (c2 + c3) + (c4 + c5) + (c6 + c7);
    out[idx] = t.x + t.y + t.z + t.w;
}

const TM: u32 = {{TM}}u;               // lds: rows of the micro-tile (8: 8 x 8, 4: 4 x 8)
const SA: u32 = 33u;                  // quads per staged depth row (32 and one of padding)
const Q: u32 = 8u * SA;               // quads per plane
var<workgroup> sa: array<vec2<{{T}}>, 2u * Q>;
var<workgroup> sb: array<vec2<{{T}}>, 2u * Q>;

// Fill the staging planes (invocation lid of 256).
fn fill(lid: u32) {
    for (var e = lid; e < 2u * Q; e += 256u) {
        sa[e] = vec2<{{T}}>({{T}}(p.mul) + {{T}}(e) * {{T}}(1e-9), {{T}}(p.mul));
        sb[e] = vec2<{{T}}>({{T}}(p.add), {{T}}(p.add) * {{T}}(e));
    }
}

// Quad q of the A (B) staging (gemm_stage_pairs.wgsl's quad_a, quad_b).
fn quad_a(q: u32) -> vec4<{{T}}> {
    return vec4<{{T}}>(sa[q], sa[Q + q]);
}

fn quad_b(q: u32) -> vec4<{{T}}> {
    return vec4<{{T}}>(sb[q], sb[Q + q]);
}

@compute @workgroup_size(256)
fn lds(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    fill(lid);
    workgroupBarrier();
    let tx = lid % 16u;
    let ty = lid / 16u;
    var c00 = vec4<{{T}}>(0); var c01 = c00; var c10 = c00; var c11 = c00;
    var c20 = c00; var c21 = c00; var c30 = c00; var c31 = c00;
    var c40 = c00; var c41 = c00; var c50 = c00; var c51 = c00;
    var c60 = c00; var c61 = c00; var c70 = c00; var c71 = c00;
    for (var i = 0u; i < p.iters; i++) {
        let row = (i & 7u) * SA;
        let ai = row + tx;
        let bi = row + ty;
        let a0 = quad_a(ai);
        let b0 = quad_b(bi);
        let b1 = quad_b(bi + 16u);
        c00 = fma(a0, vec4<{{T}}>(b0.x), c00);
        c10 = fma(a0, vec4<{{T}}>(b0.y), c10);
        c20 = fma(a0, vec4<{{T}}>(b0.z), c20);
        c30 = fma(a0, vec4<{{T}}>(b0.w), c30);
        c40 = fma(a0, vec4<{{T}}>(b1.x), c40);
        c50 = fma(a0, vec4<{{T}}>(b1.y), c50);
        c60 = fma(a0, vec4<{{T}}>(b1.z), c60);
        c70 = fma(a0, vec4<{{T}}>(b1.w), c70);
        if (TM == 8u) {
            let a1 = quad_a(ai + 16u);
            c01 = fma(a1, vec4<{{T}}>(b0.x), c01);
            c11 = fma(a1, vec4<{{T}}>(b0.y), c11);
            c21 = fma(a1, vec4<{{T}}>(b0.z), c21);
            c31 = fma(a1, vec4<{{T}}>(b0.w), c31);
            c41 = fma(a1, vec4<{{T}}>(b1.x), c41);
            c51 = fma(a1, vec4<{{T}}>(b1.y), c51);
            c61 = fma(a1, vec4<{{T}}>(b1.z), c61);
            c71 = fma(a1, vec4<{{T}}>(b1.w), c71);
        }
    }
    let t = ((c00 + c01) + (c10 + c11)) + ((c20 + c21) + (c30 + c31))
        + ((c40 + c41) + (c50 + c51)) + ((c60 + c61) + (c70 + c71));
    out[gid.x] = t.x + t.y + t.z + t.w;
}
