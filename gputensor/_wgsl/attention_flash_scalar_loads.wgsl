// attention_flash.wgsl's LOADERS when q, k, v are bound as arrays of scalars (ops_attention):
// ld4_X(i) reads elements i..i+3 of X as a vec4<T>; ld4_Xm(i, ok, n) the same with components
// c >= n (or all when !ok) 0 and never read past the binding (they read X's first element).
fn ld4_q(i: u32) -> vec4<T> {
    return vec4<T>(T(q[i]), T(q[i + 1u]), T(q[i + 2u]), T(q[i + 3u]));
}

fn ld4_qm(i: u32, ok: bool, n: u32) -> vec4<T> {
    let f = params.q_first;
    let m = vec4<bool>(ok && n > 0u, ok && n > 1u, ok && n > 2u, ok && n > 3u);
    let a = vec4<T>(T(q[select(f, i, m.x)]), T(q[select(f, i + 1u, m.y)]),
                    T(q[select(f, i + 2u, m.z)]), T(q[select(f, i + 3u, m.w)]));
    return select(vec4<T>(T(0)), a, m);
}

fn ld4_k(i: u32) -> vec4<T> {
    return vec4<T>(T(k[i]), T(k[i + 1u]), T(k[i + 2u]), T(k[i + 3u]));
}

fn ld4_km(i: u32, ok: bool, n: u32) -> vec4<T> {
    let f = params.k_first;
    let m = vec4<bool>(ok && n > 0u, ok && n > 1u, ok && n > 2u, ok && n > 3u);
    let a = vec4<T>(T(k[select(f, i, m.x)]), T(k[select(f, i + 1u, m.y)]),
                    T(k[select(f, i + 2u, m.z)]), T(k[select(f, i + 3u, m.w)]));
    return select(vec4<T>(T(0)), a, m);
}

fn ld4_v(i: u32) -> vec4<T> {
    return vec4<T>(T(v[i]), T(v[i + 1u]), T(v[i + 2u]), T(v[i + 3u]));
}

fn ld4_vm(i: u32, ok: bool, n: u32) -> vec4<T> {
    let f = params.v_first;
    let m = vec4<bool>(ok && n > 0u, ok && n > 1u, ok && n > 2u, ok && n > 3u);
    let a = vec4<T>(T(v[select(f, i, m.x)]), T(v[select(f, i + 1u, m.y)]),
                    T(v[select(f, i + 2u, m.z)]), T(v[select(f, i + 3u, m.w)]));
    return select(vec4<T>(T(0)), a, m);
}
