// The vector path: the source bound again at BINDING as WIDTH-lane vectors of its storage type
// ARRAY, loaded as VEC_T.
@group(0) @binding({{BINDING}}) var<storage, read> srcv: array<vec{{WIDTH}}<{{ARRAY}}>>;

fn load_vec(v: u32) -> {{VEC_T}} {
    return srcv[v];
}
