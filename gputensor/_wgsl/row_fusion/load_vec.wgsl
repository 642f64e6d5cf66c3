// ldv{{A}}(i) / ld{{A}}(i): the 4 elements from i (a multiple of 4) / element i of the float32 slot A,
// bound as vec4s.
fn ldv{{A}}(i: u32) -> vec4<f32> { return A{{A}}[i >> 2u]; }
fn ld{{A}}(i: u32) -> f32 { return A{{A}}[i >> 2u][i & 3u]; }
