// Sort keys of a signed integer dtype of up to 32 bits (SIGN: its sign bit, MASK: its bits): the
// bits with the sign bit flipped.
const KEY_DESC: bool = {{DESC}};

fn to_key(b: vec2<u32>) -> vec2<u32> {
    var k = b.x ^ {{SIGN}}u;
    if (KEY_DESC) { k = ~k & {{MASK}}u; }
    return vec2<u32>(k, 0u);
}

fn from_key(key: vec2<u32>) -> vec2<u32> {
    var k = key.x;
    if (KEY_DESC) { k = ~k & {{MASK}}u; }
    return vec2<u32>(k ^ {{SIGN}}u, 0u);
}
