// Accessors of a float16 binding written in paired units (array<vec4<u32>>):
// st{{NAME}}4(i, v) stores 4 elements from i (a multiple of 4); st{{NAME}}(i, v) unused.
fn st{{NAME}}4(i: u32, v: vec4<T>) {
    let k = (i >> 2u) & 1u;
    {{B}}[i >> 3u][2u * k] = row_f16x2(f32(v.x), f32(v.y));
    {{B}}[i >> 3u][2u * k + 1u] = row_f16x2(f32(v.z), f32(v.w));
}
fn st{{NAME}}(i: u32, v: T) { }
