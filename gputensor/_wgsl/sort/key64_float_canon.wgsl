// Canonical sort keys of float64: equal values get equal keys (every NaN the largest key, -0.0
// that of +0.0); negative values complemented, the others with the sign set.
const KEY_DESC: bool = {{DESC}};

fn to_key(b: vec2<u32>) -> vec2<u32> {
    var v = b;
    let hi = v.y & 0x7FFFFFFFu;
    if (hi > 0x7FF00000u || (hi == 0x7FF00000u && v.x != 0u)) { v = vec2<u32>(0xFFFFFFFFu, 0x7FFFFFFFu); }
    if (v.y == 0x80000000u && v.x == 0u) { v = vec2<u32>(0u, 0u); }
    var k = select(vec2<u32>(v.x, v.y | 0x80000000u), ~v, (v.y & 0x80000000u) != 0u);
    if (KEY_DESC) { k = ~k; }
    return k;
}

fn from_key(key: vec2<u32>) -> vec2<u32> {
    var k = key;
    if (KEY_DESC) { k = ~k; }
    return select(~k, vec2<u32>(k.x, k.y ^ 0x80000000u), (k.y & 0x80000000u) != 0u);
}
