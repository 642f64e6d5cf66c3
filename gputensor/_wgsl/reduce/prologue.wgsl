// A fused prologue's functions: pro_w(i), parameter word i of the prologue, and fused_src(i),
// element i of the reduction's source as the prologue computes it (BODY: the prologue_* lines).
fn pro_w(i: u32) -> u32 {
    return params.ext[i >> 2u][i & 3u];
}

fn fused_src(i: u32) -> {{COMPUTE}} {
{{BODY}}
}
