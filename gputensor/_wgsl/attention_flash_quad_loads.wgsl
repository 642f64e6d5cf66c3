// attention_flash.wgsl's LOADERS when q, k, v are bound as arrays of vec4 (ops_attention: head_dim
// and every operand's first element index multiples of 4): ld4_X(i) reads the quad of elements
// i..i+3 (i a multiple of 4) as a vec4<T>; ld4_Xm(i, ok, n) the same, 0 unless ok && n > 0.
fn ld4_q(i: u32) -> vec4<T> {
    return vec4<T>(q[i / 4u]);
}

fn ld4_qm(i: u32, ok: bool, n: u32) -> vec4<T> {
    let m = ok && n > 0u;
    return select(vec4<T>(T(0)), vec4<T>(q[select(params.q_first, i, m) / 4u]), m);
}

fn ld4_k(i: u32) -> vec4<T> {
    return vec4<T>(k[i / 4u]);
}

fn ld4_km(i: u32, ok: bool, n: u32) -> vec4<T> {
    let m = ok && n > 0u;
    return select(vec4<T>(T(0)), vec4<T>(k[select(params.k_first, i, m) / 4u]), m);
}

fn ld4_v(i: u32) -> vec4<T> {
    return vec4<T>(v[i / 4u]);
}

fn ld4_vm(i: u32, ok: bool, n: u32) -> vec4<T> {
    let m = ok && n > 0u;
    return select(vec4<T>(T(0)), vec4<T>(v[select(params.v_first, i, m) / 4u]), m);
}
