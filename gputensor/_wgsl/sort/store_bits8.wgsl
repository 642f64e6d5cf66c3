// {{FN}}(o, bits): stores bits as element o of {{BUF}} (atomic<u32> words) of a 8-bit dtype;
// packed lanes are ORed into a zero-filled word.
fn {{FN}}(o: u32, bits: vec2<u32>) {
    atomicOr(&{{BUF}}[o >> 2u], (bits.x & 0xFFu) << ((o & 3u) * 8u));
}
