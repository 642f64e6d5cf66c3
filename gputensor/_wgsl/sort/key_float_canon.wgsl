// Canonical sort keys of a float dtype of up to 32 bits (SGN: sign bit, MAGNITUDE: the other
// bits, INF: the bits of infinity, MASK: all bits): equal values get equal keys (every NaN the
// largest key, -0.0 that of +0.0); negative values complemented, the others with the sign set.
const KEY_DESC: bool = {{DESC}};

fn to_key(b: vec2<u32>) -> vec2<u32> {
    var v = b.x;
    if ((v & {{MAGNITUDE}}u) > {{INF}}u) { v = {{MAGNITUDE}}u; }  // NaN -> all-ones key
    if (v == {{SGN}}u) { v = 0u; }  // -0.0 -> +0.0
    var k = select(v | {{SGN}}u, ~v & {{MASK}}u, (v & {{SGN}}u) != 0u);
    if (KEY_DESC) { k = ~k & {{MASK}}u; }
    return vec2<u32>(k, 0u);
}

fn from_key(key: vec2<u32>) -> vec2<u32> {
    var k = key.x;
    if (KEY_DESC) { k = ~k & {{MASK}}u; }
    return vec2<u32>(select(~k & {{MASK}}u, k ^ {{SGN}}u, (k & {{SGN}}u) != 0u), 0u);
}
