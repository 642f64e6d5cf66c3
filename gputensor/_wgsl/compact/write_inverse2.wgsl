// compact_write's writers of write_inverse: group id g of sorted position i as a 64-bit integer
// at inv[perm[i]] (within the bound window).
fn write_flagged(r: u32, i: u32) {
}

fn write_all(g: u32, i: u32) {
    let o = params.inv_base + perm[params.perm_first + i];
    if (o < params.inv_lo || o >= params.inv_hi) {
        return;
    }
    inv[2u * o] = g;
    inv[2u * o + 1u] = 0u;
}
