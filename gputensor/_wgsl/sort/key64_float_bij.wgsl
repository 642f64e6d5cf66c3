// Bijective sort keys of float64: the order-preserving map of the bits minus 2^52 - 1 (with a
// borrow), so that the negative NaNs sort last with the positive ones; from_key adds it back
// (with a carry).
const KEY_DESC: bool = {{DESC}};

fn to_key(b: vec2<u32>) -> vec2<u32> {
    let v = b;
    let t = select(vec2<u32>(v.x, v.y | 0x80000000u), ~v, (v.y & 0x80000000u) != 0u);
    let lo = t.x - 0xFFFFFFFFu;
    let borrow = select(0u, 1u, t.x < 0xFFFFFFFFu);
    var k = vec2<u32>(lo, t.y - 0x000FFFFFu - borrow);
    if (KEY_DESC) { k = ~k; }
    return k;
}

fn from_key(key: vec2<u32>) -> vec2<u32> {
    var k = key;
    if (KEY_DESC) { k = ~k; }
    let lo = k.x + 0xFFFFFFFFu;
    let carry = select(0u, 1u, lo < k.x);
    let t = vec2<u32>(lo, k.y + 0x000FFFFFu + carry);
    return select(~t, vec2<u32>(t.x, t.y ^ 0x80000000u), (t.y & 0x80000000u) != 0u);
}
