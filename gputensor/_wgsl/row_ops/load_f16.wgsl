// Accessors of a float16 binding read one element at a time (array<u32>, two a word).
fn ld{{NAME}}(i: u32) -> T { return T(unpack2x16float({{B}}[i >> 1u])[i & 1u]); }
fn ld{{NAME}}4(i: u32) -> vec4<T> { return vec4<T>(T(0)); }
