// FMA throughput probe (benchmarks/tools/fma_peak.py): every invocation runs `iters` rounds of
// 32 independent fma chains in {{T}} (eight vec4 accumulators), then stores their sum, so that
// nothing is dead code. Operands come from the uniform: the compiler cannot fold the chains.
struct Params {
    iters: u32,
    mul: f32,
    add: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<{{T}}>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
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
