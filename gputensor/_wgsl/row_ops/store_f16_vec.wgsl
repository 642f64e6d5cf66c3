// Accessors of a float16 binding written 4 elements at a time (array<vec2<u32>>).
fn st{{NAME}}4(i: u32, v: vec4<T>) {
    {{B}}[i >> 2u] = vec2<u32>(row_f16x2(f32(v.x), f32(v.y)),
                          row_f16x2(f32(v.z), f32(v.w)));
}
fn st{{NAME}}(i: u32, v: T) { }
