// compact_write's finish_tile for staged outputs: the tile's total words in stage, written
// from output rank base on as WORDS-word integers (the high word 0), consecutive invocations
// on consecutive elements.
fn finish_tile(base: u32, total: u32, lid: u32) {
    for (var k = lid; k < total; k += WG) {
        let o = params.out_base + base + k;
        if ({{WORDS}}u == 2u) {
            out[2u * o] = stage[k];
            out[2u * o + 1u] = 0u;
        } else {
            out[o] = stage[k];
        }
    }
}
