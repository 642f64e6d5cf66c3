// Sort keys of an unsigned integer or bool dtype of up to 32 bits (MASK: its bits): the bits
// themselves, complemented for a descending sort.
const KEY_DESC: bool = {{DESC}};

fn to_key(b: vec2<u32>) -> vec2<u32> {
    var k = b.x;
    if (KEY_DESC) { k = ~k & {{MASK}}u; }
    return vec2<u32>(k, 0u);
}

fn from_key(key: vec2<u32>) -> vec2<u32> {
    var k = key.x;
    if (KEY_DESC) { k = ~k & {{MASK}}u; }
    return vec2<u32>(k, 0u);
}
