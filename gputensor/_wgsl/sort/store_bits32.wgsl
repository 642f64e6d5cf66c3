// {{FN}}(o, bits): stores bits as element o of {{BUF}} (u32 words) of a 32-bit dtype.
fn {{FN}}(o: u32, bits: vec2<u32>) {
    {{BUF}}[o] = bits.x;
}
