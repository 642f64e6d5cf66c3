// Accessors of a float32/float64 binding written one element at a time.
fn st{{NAME}}(i: u32, v: T) { {{B}}[i] = {{STORAGE}}(v); }
fn st{{NAME}}4(i: u32, v: vec4<T>) { }
