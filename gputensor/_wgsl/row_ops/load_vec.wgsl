// Accessors of a float32/float64 binding read 4 elements at a time (array<vec4> of the storage type).
fn ld{{NAME}}4(i: u32) -> vec4<T> { return vec4<T>({{B}}[i >> 2u]); }
fn ld{{NAME}}(i: u32) -> T { return T(0); }
