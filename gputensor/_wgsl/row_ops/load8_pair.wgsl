// ld{{NAME}}8(i): the 8 elements from i (a multiple of 8) of a float16 binding of paired units,
// in one 16-byte load.
fn ld{{NAME}}8(i: u32) -> Pair {
    let w = {{B}}[i >> 3u];
    let a = unpack2x16float(w.x);
    let c = unpack2x16float(w.y);
    let d = unpack2x16float(w.z);
    let e = unpack2x16float(w.w);
    return Pair(vec4<T>(T(a.x), T(a.y), T(c.x), T(c.y)), vec4<T>(T(d.x), T(d.y), T(e.x), T(e.y)));
}
