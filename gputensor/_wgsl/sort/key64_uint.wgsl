// Sort keys of a 64-bit unsigned integer dtype: the bits themselves (low word first),
// complemented for a descending sort.
const KEY_DESC: bool = {{DESC}};

fn to_key(b: vec2<u32>) -> vec2<u32> {
    var k = b;
    if (KEY_DESC) { k = ~k; }
    return k;
}

fn from_key(key: vec2<u32>) -> vec2<u32> {
    var k = key;
    if (KEY_DESC) { k = ~k; }
    return k;
}
