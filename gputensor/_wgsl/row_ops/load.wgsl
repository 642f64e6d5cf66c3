// Accessors of a float32/float64 binding read one element at a time.
fn ld{{NAME}}(i: u32) -> T { return T({{B}}[i]); }
fn ld{{NAME}}4(i: u32) -> vec4<T> { return vec4<T>(T(0)); }
