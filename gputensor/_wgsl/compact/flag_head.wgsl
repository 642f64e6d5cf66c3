// flag(i): whether sorted key i (KW words) heads a group of equal keys; with NAN_DISTINCT every
// NaN key (MAXKEY) is a group of its own.
fn key_at(i: u32) -> vec2<u32> {
    if (KW == 2u) {
        return vec2<u32>(src[2u * i], src[2u * i + 1u]);
    }
    return vec2<u32>(src[i], 0u);
}

fn flag(i: u32) -> bool {
    let k = key_at(params.src_first + i);
    if (params.g0 + i == 0u || ({{NAN_DISTINCT}} && all(k == MAXKEY))) {
        return true;
    }
    return any(k != key_at(params.src_first + i - 1u));
}
