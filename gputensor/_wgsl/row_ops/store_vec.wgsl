// Accessors of a float32/float64 binding written 4 elements at a time (array<vec4> of the storage type).
fn st{{NAME}}4(i: u32, v: vec4<T>) { {{B}}[i >> 2u] = vec4<{{STORAGE}}>(v); }
fn st{{NAME}}(i: u32, v: T) { }
