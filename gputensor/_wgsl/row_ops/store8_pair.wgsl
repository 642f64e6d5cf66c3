// st{{NAME}}8(i, p): stores 8 elements from i (a multiple of 8) of a float16 binding of paired
// units in one 16-byte store.
fn st{{NAME}}8(i: u32, p: Pair) {
    {{B}}[i >> 3u] = vec4<u32>(row_f16x2(f32(p.lo.x), f32(p.lo.y)),
        row_f16x2(f32(p.lo.z), f32(p.lo.w)),
        row_f16x2(f32(p.hi.x), f32(p.hi.y)),
        row_f16x2(f32(p.hi.z), f32(p.hi.w)));
}
