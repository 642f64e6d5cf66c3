// {{FN}}(o, bits): stores bits as element o of {{BUF}} (u32 words) of a 64-bit dtype.
fn {{FN}}(o: u32, bits: vec2<u32>) {
    {{BUF}}[2u * o] = bits.x;
    {{BUF}}[2u * o + 1u] = bits.y;
}
