// write_out(e, k, v) of output mode 0: the two key words at dst_base + e.
fn write_out(e: u32, k: vec2<u32>, v: u32) {
    let o = params.dst_base + e;
    dst[2u * o] = k.x;
    dst[2u * o + 1u] = k.y;
}
