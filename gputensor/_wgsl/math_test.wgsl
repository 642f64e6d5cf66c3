// Test kernel for the f32math and f64math libraries (tests/test_f32math.py, test_f64math.py):
// out[i] = CALL for i < n, in the float type T (f32 or f64). Placeholder FUNCS receives the
// library functions the call needs; placeholder CALL is a T expression that may use `x`
// (= inp[i]), `i`, `inp` and `params.n` (a two-argument function reads its second argument as
// inp[params.n + i]).
//#include common

{{FUNCS}}

struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> inp: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> outp: array<{{T}}>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * 64u + lid;
    if (i >= params.n) {
        return;
    }
    let x = inp[i];
    outp[i] = {{CALL}};
}
