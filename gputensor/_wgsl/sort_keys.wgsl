// Radix-sort keys, pulled in with `//#include sort_keys` (ops_sort.py writes the functions).
//
// A key is the element's bits mapped to an unsigned integer whose order is the sort order,
// held as vec2<u32> (x: low word, y: high word; y = 0 for keys of 32 bits or fewer) and stored
// in key buffers as KW u32 words per element. Every operand is bound as array<u32> and read as
// raw bits: 8/16-bit dtypes are extracted from their packed words, 64-bit ones read as two
// words, so no 64-bit WGSL type is needed.
//
//   load_bits(buf, i)   raw bits of element i (element units of the dtype) of an array<u32>
//   to_key(b)           bits -> key (ascending or descending, sort_key_code.key_functions)
//   from_key(k)         key -> bits (sort output and unique values; bijective modes only)
//   digit(k, shift)     8 bits of the key starting at bit `shift`

const KW: u32 = {{KW}}u;
// all-ones key of the key width: the digit 255 at every shift (padding sorts last)
const MAXKEY: vec2<u32> = vec2<u32>({{MAXKEY_LO}}u, {{MAXKEY_HI}}u);

{{KEY_FNS}}

fn digit(k: vec2<u32>, shift: u32) -> u32 {
    if (shift >= 32u) {
        return (k.y >> (shift - 32u)) & 255u;
    }
    return (k.x >> shift) & 255u;
}

// lexicographic (high word, low word) order of keys
fn key_less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}
