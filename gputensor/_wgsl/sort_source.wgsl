// The key of source element i of a radix pass, pulled in with `//#include sort_source` by the
// histogram and scatter kernels (which declare the `src` binding, SRC_KEYS and the SRC_LOADER's
// src_bits): the first pass maps the dtype's bits (SRC_KEYS = false), later passes read the key
// buffer of KW words per element.

fn load_key(i: u32) -> vec2<u32> {
    if (SRC_KEYS) {
        if (KW == 2u) {
            return vec2<u32>(src[2u * i], src[2u * i + 1u]);
        }
        return vec2<u32>(src[i], 0u);
    }
    return to_key(src_bits(i));
}
