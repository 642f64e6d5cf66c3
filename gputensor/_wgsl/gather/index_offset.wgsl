// index_offset(at): the element offset of the indexed axes at the index positions `at` (one
// component per index array): TERMS are index_term snippets.
fn index_offset(at: vec4<u32>) -> u32 {
    var off = 0u;
{{TERMS}}
    return off;
}
