// Accessors of a float16 binding read in paired units (array<vec4<u32>>, 8 elements a word):
// ld{{NAME}}4(i) the 4 elements from i (a multiple of 4); ld{{NAME}}(i) unused.
fn ld{{NAME}}4(i: u32) -> vec4<T> {
    let w = {{B}}[i >> 3u];
    let h = select(w.xy, w.zw, ((i >> 2u) & 1u) == 1u);
    let lo = unpack2x16float(h.x);
    let hi = unpack2x16float(h.y);
    return vec4<T>(T(lo.x), T(lo.y), T(hi.x), T(hi.y));
}
fn ld{{NAME}}(i: u32) -> T { return T(0); }
