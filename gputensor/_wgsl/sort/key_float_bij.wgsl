// Bijective sort keys of a float dtype of up to 32 bits (SGN: sign bit, MASK: all bits, NEGNAN:
// the count of NaNs with the sign bit): the order-preserving map of the bits, shifted so that the
// negative NaNs sort last with the positive ones.
const KEY_DESC: bool = {{DESC}};

fn to_key(b: vec2<u32>) -> vec2<u32> {
    let v = b.x;
    let t = select(v | {{SGN}}u, ~v & {{MASK}}u, (v & {{SGN}}u) != 0u);
    var k = (t - {{NEGNAN}}u) & {{MASK}}u;
    if (KEY_DESC) { k = ~k & {{MASK}}u; }
    return vec2<u32>(k, 0u);
}

fn from_key(key: vec2<u32>) -> vec2<u32> {
    var k = key.x;
    if (KEY_DESC) { k = ~k & {{MASK}}u; }
    let t = (k + {{NEGNAN}}u) & {{MASK}}u;
    return vec2<u32>(select(~t & {{MASK}}u, t ^ {{SGN}}u, (t & {{SGN}}u) != 0u), 0u);
}
