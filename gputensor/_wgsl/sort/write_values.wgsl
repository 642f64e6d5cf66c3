// write_out(e, k, v) of output mode 2: the value (an index) at dst_base + e.
fn write_out(e: u32, k: vec2<u32>, v: u32) {
    let o = params.dst_base + e;
    dst[o] = v;
}
