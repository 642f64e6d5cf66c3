// {{FN}}(o, bits): stores bits as element o of {{BUF}} (atomic<u32> words) of a 16-bit dtype;
// packed lanes are ORed into a zero-filled word.
fn {{FN}}(o: u32, bits: vec2<u32>) {
    atomicOr(&{{BUF}}[o >> 1u], (bits.x & 0xFFFFu) << ((o & 1u) * 16u));
}
