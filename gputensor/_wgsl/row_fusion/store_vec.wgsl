// stv{{A}}(i, v): stores the 4 elements from i (a multiple of 4) of the float32 slot A, bound as vec4s.
fn stv{{A}}(i: u32, v: vec4<f32>) { A{{A}}[i >> 2u] = v; }
