// The sample frequencies of a DFT: out[i] = i * scale for i < cut, (i - n) * scale after
// (fftfreq: cut = (n + 1) / 2; rfftfreq: cut = count, every term non-negative).
//#include common

alias T = {{T}};
const WG: u32 = 256u;

struct Params {
    scale: T, {{PAD}}
    count: u32, cut: u32, n: u32, first: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG + lid;
    if i >= p.count {
        return;
    }
    var k = T(i);
    if i >= p.cut {
        k = -T(p.n - i);
    }
    out[p.first + i] = k * p.scale;
}
