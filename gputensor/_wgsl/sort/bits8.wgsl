// {{FN}}(i): the raw bits of element i of {{BUF}} (array<u32>) of a 8-bit dtype, as vec2<u32>
// (high word 0 below 64 bits).
fn {{FN}}(i: u32) -> vec2<u32> {
    return vec2<u32>(({{BUF}}[i >> 2u] >> ((i & 3u) * 8u)) & 0xFFu, 0u);
}
