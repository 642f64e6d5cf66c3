// Accessors of a float16 binding read 4 elements at a time (array<vec2<u32>>).
fn ld{{NAME}}4(i: u32) -> vec4<T> {
    let w = {{B}}[i >> 2u];
    let lo = unpack2x16float(w.x);
    let hi = unpack2x16float(w.y);
    return vec4<T>(T(lo.x), T(lo.y), T(hi.x), T(hi.y));
}
fn ld{{NAME}}(i: u32) -> T { return T(0); }
