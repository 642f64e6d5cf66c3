// Sort keys of a 64-bit signed integer dtype: the bits with the sign bit flipped.
const KEY_DESC: bool = {{DESC}};

fn to_key(b: vec2<u32>) -> vec2<u32> {
    var k = vec2<u32>(b.x, b.y ^ 0x80000000u);
    if (KEY_DESC) { k = ~k; }
    return k;
}

fn from_key(key: vec2<u32>) -> vec2<u32> {
    var k = key;
    if (KEY_DESC) { k = ~k; }
    return vec2<u32>(k.x, k.y ^ 0x80000000u);
}
