// compact_write's writers of write_inverse: group id g of sorted position i as a 64-bit integer
// at inv[perm[i]] (source positions [inv_lo, inv_hi) are bound: inv_base is the binding
// element of position 0).
fn write_flagged(r: u32, i: u32) {
}

fn write_all(g: u32, i: u32) {
    let p = perm[params.perm_first + i];
    if (p < params.inv_lo || p >= params.inv_hi) {
        return;
    }
    let o = params.inv_base + p;
    inv[2u * o] = g;
    inv[2u * o + 1u] = 0u;
}
